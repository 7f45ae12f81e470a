package kv

import "context"

// Backend is what an engine implements. The DB wraps it with buffering,
// read-your-writes, limits, fault injection and retries, so an engine only has to
// offer a consistent read view and an atomic, conflict-checked commit.
type Backend interface {
	// Snapshot returns a read view at the newest committed version.
	Snapshot(ctx context.Context) (Snapshot, error)
	// Commit atomically checks req's read conflicts against every commit after
	// req.ReadVersion and, if none, applies its writes. It returns the commit
	// version, ErrConflict, ErrTooOld, or ErrMaybeCommitted when it cannot tell.
	Commit(ctx context.Context, req *CommitRequest) (int64, error)
	// Close releases the engine.
	Close() error
}

// Snapshot is a consistent read view at one version. It is used by one
// transaction at a time and released when the transaction ends.
type Snapshot interface {
	Version() int64
	Get(ctx context.Context, key []byte) (value []byte, found bool, err error)
	// Scan returns up to limit (> 0) entries of [begin, end) in key order, or in
	// reverse order when reverse is set, and whether more entries remain.
	Scan(ctx context.Context, begin, end []byte, limit int, reverse bool) ([]KeyValue, bool, error)
	Release()
}

// CommitRequest is a finished transaction handed to the engine. Writes are
// normalised: Sets and Clears name distinct keys, ClearRanges are sorted and
// disjoint, and a Set may fall inside a ClearRange (the Set wins). An engine
// applies ClearRanges, then Clears and Sets, then Stamped.
type CommitRequest struct {
	Snapshot    Snapshot // the transaction's read view; nil when it never read
	ReadVersion int64    // Snapshot.Version(), or 0 when Snapshot is nil
	ReadKeys    [][]byte
	ReadRanges  []KeyRange
	Sets        []KeyValue
	Clears      [][]byte
	ClearRanges []KeyRange
	Stamped     []StampedOp

	// Relaxed: the commit may be acknowledged before it is durable
	// (durability.Relaxed); engines that sync every commit ignore it.
	Relaxed bool
	// InProcess: a relaxed commit whose caller lives in this process
	// (durability.InProcess); it may be acknowledged before it is logged.
	InProcess bool

	// Stamp is set by the engine on commit to the versionstamp it wrote into
	// Stamped ops (engines whose stamps are their commit versions use MakeStamp).
	Stamp []byte
}

// HasReads reports whether the request carries read conflicts to check.
func (r *CommitRequest) HasReads() bool { return len(r.ReadKeys) > 0 || len(r.ReadRanges) > 0 }

// WriteKeys lists every key the request writes, versionstamped ones resolved
// with stamp, for engines that record write conflicts.
func (r *CommitRequest) WriteKeys(stamp []byte) [][]byte {
	keys := make([][]byte, 0, len(r.Sets)+len(r.Clears)+len(r.Stamped))
	for _, kv := range r.Sets {
		keys = append(keys, kv.Key)
	}
	keys = append(keys, r.Clears...)
	for _, op := range r.Stamped {
		k, _ := op.Resolve(stamp)
		keys = append(keys, k)
	}
	return keys
}
