package craq

// ChunkState is what a replica's dump-chunkmeta says of one chunk.
type ChunkState struct {
	ChainVer  uint32
	CommitVer uint32
	UpdateVer uint32
	Checksum  uint32
	Len       uint32 // bytes of content: what sending the chunk costs
}

// SyncAction is what recovery does with one chunk of a returning target.
type SyncAction uint8

const (
	SyncSkip   SyncAction = iota + 1 // the two copies are equal, or the chunk is being written now
	SyncSend                         // send the predecessor's whole chunk as a replace
	SyncRemove                       // remove the chunk from the returning target
)

func (a SyncAction) String() string {
	switch a {
	case SyncSkip:
		return "skip"
	case SyncSend:
		return "send"
	case SyncRemove:
		return "remove"
	}
	return "sync?"
}

// SyncDecision applies the five transfer rules of recovery, comparing the
// predecessor's chunk (local) with the returning target's (remote); nil means
// the replica has no such chunk:
//  1. only on the predecessor: send;
//  2. only on the returning target: remove;
//  3. the predecessor's chain version is higher: send (the target missed a
//     membership change, so its copy may be from a dead branch);
//  4. same chain version, but the predecessor's committed version is not the
//     target's pending one: send;
//  5. otherwise the copies are equal, or being written right now (that write
//     reaches the target through the chain as a full-chunk replace): skip.
func SyncDecision(local, remote *ChunkState) SyncAction {
	switch {
	case local == nil && remote == nil:
		return SyncSkip
	case remote == nil:
		return SyncSend
	case local == nil:
		return SyncRemove
	case local.ChainVer > remote.ChainVer:
		return SyncSend
	case local.CommitVer != remote.UpdateVer:
		if local.UpdateVer == remote.UpdateVer && local.UpdateVer != local.CommitVer {
			return SyncSkip // the same update is in flight on both: the chain will commit it
		}
		return SyncSend
	case remote.UpdateVer != remote.CommitVer:
		return SyncSend // committed here, still pending there: send to settle it
	}
	return SyncSkip
}
