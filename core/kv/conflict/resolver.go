// Package conflict holds the commit-time conflict check for engines that keep
// their own history (memkv, pebblekv): which keys and ranges were written at
// which version, for a bounded window of recent commits.
package conflict

import (
	"bytes"
	"sort"
	"time"

	"github.com/flyfs/flyfs/core/kv"
)

type logEntry struct {
	version int64
	at      time.Time
	keys    [][]byte
	ranges  []kv.KeyRange
}

// Resolver remembers the writes of the commits of the last Window. Invariant:
// every write with a version >= Horizon() is remembered, so a read version
// rv >= Horizon() can be checked exactly; an older one is refused as too old.
// A Resolver is not safe for concurrent use: the engine calls it under the lock
// that orders its commits, so versions arrive in increasing order.
//
// The history is the log of commits alone, no index of keys: a check looks
// only at the commits made after its read version, which for a transaction
// of a millisecond are none or a few, so recording a commit (the cost every
// commit pays) is an append and checking one mostly a binary search.
type Resolver struct {
	window  time.Duration
	log     []logEntry // commits, oldest first, from log[head]
	head    int
	horizon int64
}

// New returns a Resolver that keeps window of history (FoundationDB keeps 5 s;
// our transactions are bounded by 5 s, so keep more).
func New(window time.Duration) *Resolver {
	return &Resolver{window: window}
}

// Horizon is the oldest read version the resolver can still check.
func (r *Resolver) Horizon() int64 { return r.horizon }

// Check returns kv.ErrTooOld if rv is older than the history, kv.ErrConflict
// if a key or range in req's read set was written after rv, and nil otherwise.
func (r *Resolver) Check(req *kv.CommitRequest) error {
	if !req.HasReads() {
		return nil
	}
	rv := req.ReadVersion
	if rv < r.horizon {
		return kv.Errorf(kv.CodeTooOld, "read version %d is behind the conflict history (%d)", rv, r.horizon)
	}
	live := r.log[r.head:]
	newer := live[sort.Search(len(live), func(i int) bool { return live[i].version > rv }):]
	if len(newer) == 0 {
		return nil
	}
	read := readKeys(req.ReadKeys, len(newer))
	for _, e := range newer {
		for _, k := range e.keys {
			if read(k) {
				return conflictOn(k)
			}
			for _, rr := range req.ReadRanges {
				if rr.Contains(k) {
					return conflictOn(k)
				}
			}
		}
		for _, w := range e.ranges {
			for _, k := range req.ReadKeys {
				if w.Contains(k) {
					return conflictOn(k)
				}
			}
			for _, rr := range req.ReadRanges {
				if w.Overlaps(rr) {
					return conflictOn(rr.Begin)
				}
			}
		}
	}
	return nil
}

// readKeys returns a membership test for keys, to be asked about the writes
// of newer commits: a scan of the keys when they or the commits are few,
// else a set.
func readKeys(keys [][]byte, commits int) func([]byte) bool {
	if len(keys) <= 8 || commits <= 2 {
		return func(k []byte) bool {
			for _, r := range keys {
				if bytes.Equal(r, k) {
					return true
				}
			}
			return false
		}
	}
	set := make(map[string]struct{}, len(keys))
	for _, r := range keys {
		set[string(r)] = struct{}{}
	}
	return func(k []byte) bool {
		_, ok := set[string(k)]
		return ok
	}
}

func conflictOn(key []byte) error {
	return kv.Errorf(kv.CodeConflict, "key %q was written after the read", key)
}

// Record remembers that a commit at version wrote keys and cleared ranges, and
// forgets commits older than the window.
func (r *Resolver) Record(version int64, keys [][]byte, ranges []kv.KeyRange, now time.Time) {
	r.log = append(r.log, logEntry{version: version, at: now, keys: keys, ranges: ranges})
	r.expire(now)
}

func (r *Resolver) expire(now time.Time) {
	for r.head < len(r.log) && now.Sub(r.log[r.head].at) > r.window {
		r.horizon = r.log[r.head].version
		r.log[r.head] = logEntry{}
		r.head++
	}
	if r.head > 1024 && r.head > len(r.log)/2 { // compact now and then, not per commit
		r.log = append(r.log[:0:0], r.log[r.head:]...)
		r.head = 0
	}
}
