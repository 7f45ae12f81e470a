package storageapi

import "github.com/flyfs/flyfs/core/rpc"

// Storage error codes, beside rpc's generic ones (NotFound for an unknown
// chunk, OutOfRange, DataLoss for a checksum mismatch on disk, ...).
const (
	CodeChainVersion      = rpc.CodeServiceBase + 0x300 + iota // the request's chain version is not the target's: refresh routing, retry
	CodeNotHead                                                // a client write reached a target that is not the chain's head
	CodeNotCommitted                                           // the chunk is being updated: retry, or read relaxed
	CodeNoTarget                                               // this node has no target of that chain
	CodeTargetNotServing                                       // the target may not serve reads now
	CodeNoSpace                                                // the disk is full: writes fail until space returns
	CodeReadOnly                                               // the disk had an I/O error: writes fail until a restart
	CodeChunkSizeMismatch                                      // the update's chunk size differs from the chunk's
	CodeMissingUpdate                                          // a forwarded update skips a version: resend as a full replace
	CodeDuplicate                                              // an older sequence number than the channel's last
	CodeChannelBusy                                            // the channel's previous update is still running
	CodeBadChecksum                                            // the payload does not match the request's checksum
	CodeDiskError                                              // the target's disk failed an I/O: another replica serves, the target is taken out
)

func init() {
	for c, n := range map[rpc.Code]string{
		CodeChainVersion: "ChainVersionMismatch", CodeNotHead: "NotHead", CodeNotCommitted: "ChunkNotCommitted",
		CodeNoTarget: "NoTarget", CodeTargetNotServing: "TargetNotServing", CodeNoSpace: "NoSpace",
		CodeReadOnly: "ReadOnly", CodeChunkSizeMismatch: "ChunkSizeMismatch", CodeMissingUpdate: "MissingUpdate",
		CodeDuplicate: "DuplicateUpdate", CodeChannelBusy: "ChannelBusy", CodeBadChecksum: "BadChecksum",
		CodeDiskError: "DiskError",
	} {
		rpc.RegisterCode(c, n)
	}
}
