package kv

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// Faults configures fault injection, the test mode that proves code built on
// the KV store is idempotent. Reads fail at ReadRate with retryable errors;
// commits fail at CommitRate, spread evenly over a conflict, a too-old error,
// a maybe-committed that did not commit, and a maybe-committed that DID commit.
type Faults struct {
	ReadRate   float64 // 0..1
	CommitRate float64 // 0..1
	Seed       uint64
}

// FaultCounts tells how many faults were injected, so a test can check it
// really ran under faults.
type FaultCounts struct {
	Reads, Conflicts, TooOld, MaybeNotCommitted, MaybeCommitted int64
}

type faultState struct {
	cfg    Faults
	mu     sync.Mutex
	rng    *rand.Rand
	counts struct {
		reads, conflicts, tooOld, maybeNot, maybeDid atomic.Int64
	}
}

func newFaultState(cfg *Faults) *faultState {
	if cfg == nil {
		return nil
	}
	return &faultState{cfg: *cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
}

func (f *faultState) roll() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.Float64()
}

// readFault returns an injected read error, or nil.
func (f *faultState) readFault() error {
	if f == nil || f.roll() >= f.cfg.ReadRate {
		return nil
	}
	f.counts.reads.Add(1)
	return Errorf(CodeRetryable, "injected read fault")
}

type commitFault int

const (
	noFault commitFault = iota
	faultConflict
	faultTooOld
	faultMaybeNotCommitted
	faultMaybeCommitted
)

func (f *faultState) commitFault() commitFault {
	if f == nil {
		return noFault
	}
	r := f.roll()
	if r >= f.cfg.CommitRate {
		return noFault
	}
	kind := commitFault(1 + int(r/f.cfg.CommitRate*4))
	switch kind {
	case faultConflict:
		f.counts.conflicts.Add(1)
	case faultTooOld:
		f.counts.tooOld.Add(1)
	case faultMaybeNotCommitted:
		f.counts.maybeNot.Add(1)
	default:
		kind = faultMaybeCommitted
		f.counts.maybeDid.Add(1)
	}
	return kind
}

// FaultCounts returns the faults injected so far (zero without fault injection).
func (db *DB) FaultCounts() FaultCounts {
	f := db.faults
	if f == nil {
		return FaultCounts{}
	}
	return FaultCounts{
		Reads: f.counts.reads.Load(), Conflicts: f.counts.conflicts.Load(), TooOld: f.counts.tooOld.Load(),
		MaybeNotCommitted: f.counts.maybeNot.Load(), MaybeCommitted: f.counts.maybeDid.Load(),
	}
}
