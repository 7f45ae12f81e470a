// Package conflict holds the commit-time conflict check for engines that keep
// their own history (memkv, pebblekv): which keys and ranges were written at
// which version, for a bounded window of recent commits.
package conflict

import (
	"bytes"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/google/btree"
)

type keyVersion struct {
	key     []byte
	version int64
}

type rangeVersion struct {
	r       kv.KeyRange
	version int64
}

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
// that orders its commits.
type Resolver struct {
	window  time.Duration
	keys    *btree.BTreeG[keyVersion] // newest write version of each key
	ranges  []rangeVersion            // clear ranges, oldest first
	log     []logEntry                // commits, oldest first, from log[head]
	head    int
	horizon int64
}

// New returns a Resolver that keeps window of history (FoundationDB keeps 5 s;
// our transactions are bounded by 5 s, so keep more).
func New(window time.Duration) *Resolver {
	return &Resolver{
		window: window,
		keys:   btree.NewG(32, func(a, b keyVersion) bool { return bytes.Compare(a.key, b.key) < 0 }),
	}
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
	for _, k := range req.ReadKeys {
		if kv, ok := r.keys.Get(keyVersion{key: k}); ok && kv.version > rv {
			return conflictOn(k)
		}
		for _, w := range r.ranges {
			if w.version > rv && w.r.Contains(k) {
				return conflictOn(k)
			}
		}
	}
	for _, rr := range req.ReadRanges {
		var hit []byte
		visit := func(x keyVersion) bool {
			if x.version > rv {
				hit = x.key
				return false
			}
			return true
		}
		if rr.End == nil {
			r.keys.AscendGreaterOrEqual(keyVersion{key: rr.Begin}, visit)
		} else {
			r.keys.AscendRange(keyVersion{key: rr.Begin}, keyVersion{key: rr.End}, visit)
		}
		if hit != nil {
			return conflictOn(hit)
		}
		for _, w := range r.ranges {
			if w.version > rv && w.r.Overlaps(rr) {
				return conflictOn(rr.Begin)
			}
		}
	}
	return nil
}

func conflictOn(key []byte) error {
	return kv.Errorf(kv.CodeConflict, "key %q was written after the read", key)
}

// Record remembers that a commit at version wrote keys and cleared ranges, and
// forgets commits older than the window.
func (r *Resolver) Record(version int64, keys [][]byte, ranges []kv.KeyRange, now time.Time) {
	for _, k := range keys {
		r.keys.ReplaceOrInsert(keyVersion{key: k, version: version})
	}
	for _, rg := range ranges {
		r.ranges = append(r.ranges, rangeVersion{r: rg, version: version})
	}
	r.log = append(r.log, logEntry{version: version, at: now, keys: keys, ranges: ranges})
	r.expire(now)
}

func (r *Resolver) expire(now time.Time) {
	for r.head < len(r.log) && now.Sub(r.log[r.head].at) > r.window {
		e := r.log[r.head]
		r.log[r.head] = logEntry{}
		for _, k := range e.keys {
			if kv, ok := r.keys.Get(keyVersion{key: k}); ok && kv.version == e.version {
				r.keys.Delete(kv)
			}
		}
		if len(e.ranges) > 0 {
			kept := r.ranges[:0]
			for _, w := range r.ranges {
				if w.version != e.version {
					kept = append(kept, w)
				}
			}
			r.ranges = kept
		}
		r.horizon = e.version
		r.head++
	}
	if r.head > 1024 && r.head > len(r.log)/2 { // compact now and then, not per commit
		r.log = append(r.log[:0:0], r.log[r.head:]...)
		r.head = 0
	}
}
