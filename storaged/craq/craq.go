// Package craq holds the decisions of CRAQ chain replication as pure
// functions: which version an update gets, whether a replica applies it, what a
// read may return, when a hop must forward a full-chunk replace, what a hop
// does after a forward to its successor fails, and what the recovery of a
// returning target transfers. The storage service does the I/O around them;
// tests drive every case here without disks or sockets.
//
// Version arithmetic (per chunk, per replica): CommitVer is the newest version
// every replica downstream has committed; UpdateVer >= CommitVer is the newest
// version applied here, pending while UpdateVer > CommitVer. The head gives an
// update CommitVer+1; a downstream replica accepts exactly UpdateVer+1, treats a
// version it has already committed or already holds pending as done, and
// refuses a gap (the sender then resends the whole chunk as a replace).
package craq

// Local is a replica's current state of one chunk.
type Local struct {
	Exists    bool
	CommitVer uint32
	UpdateVer uint32
}

// Pending reports whether an update is applied here but not yet committed.
func (l Local) Pending() bool { return l.Exists && l.UpdateVer != l.CommitVer }

// Action is what a replica does with an incoming update.
type Action uint8

const (
	Apply            Action = iota + 1 // apply the update as pending Version, then forward
	AlreadyPending                     // Version is applied here already (a resent forward): just forward
	AlreadyCommitted                   // Version is committed here, so everywhere downstream: answer success
	Gap                                // Version skips versions this replica never saw: refuse
)

func (a Action) String() string {
	switch a {
	case Apply:
		return "apply"
	case AlreadyPending:
		return "already-pending"
	case AlreadyCommitted:
		return "already-committed"
	case Gap:
		return "gap"
	}
	return "action?"
}

// Decision is the outcome of DecideUpdate.
type Decision struct {
	Action  Action
	Version uint32
	// ReplaceDownstream: forward the chunk's whole new content as a replace,
	// because downstream replicas may hold a different pending content (the head
	// found a leftover pending version from a failed earlier update).
	ReplaceDownstream bool
}

// AtHead decides for an update entering the chain at its head.
func AtHead(l Local) Decision {
	switch {
	case !l.Exists:
		return Decision{Action: Apply, Version: 1}
	case l.Pending():
		// An earlier update applied here never committed (its forwarding failed).
		// Go past it, and make sure downstream ends with exactly our content.
		return Decision{Action: Apply, Version: l.UpdateVer + 1, ReplaceDownstream: true}
	default:
		return Decision{Action: Apply, Version: l.CommitVer + 1}
	}
}

// Downstream decides for an update forwarded by a predecessor with version v.
// replace says the update carries the chunk's whole content.
func Downstream(l Local, v uint32, replace bool) Decision {
	if l.Exists && v <= l.CommitVer {
		return Decision{Action: AlreadyCommitted, Version: v}
	}
	if replace {
		// The whole content at version v: apply over whatever is pending here.
		return Decision{Action: Apply, Version: v}
	}
	if !l.Exists {
		if v == 1 {
			return Decision{Action: Apply, Version: v}
		}
		return Decision{Action: Gap, Version: v}
	}
	switch {
	case v <= l.UpdateVer:
		return Decision{Action: AlreadyPending, Version: v}
	case v == l.UpdateVer+1:
		return Decision{Action: Apply, Version: v}
	}
	return Decision{Action: Gap, Version: v}
}

// ShouldCommit reports whether an ack for version v moves this replica's
// committed version (a repeated ack does not).
func ShouldCommit(l Local, v uint32) bool { return l.Exists && v > l.CommitVer && v <= l.UpdateVer }

// ReadAction is what a read of a chunk may return.
type ReadAction uint8

const (
	ReadNotFound     ReadAction = iota + 1
	ReadNotCommitted            // a pending version exists: the reader retries, or reads relaxed
	ReadServe                   // serve the content
)

// Read decides a read. relaxed accepts the pending version.
func Read(l Local, relaxed bool) ReadAction {
	switch {
	case !l.Exists:
		return ReadNotFound
	case l.Pending() && !relaxed:
		return ReadNotCommitted
	}
	return ReadServe
}
