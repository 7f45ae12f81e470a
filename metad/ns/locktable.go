package ns

import "math"

// The lock table of one file: the byte-range locks (fcntl) or the
// whole-file locks (flock: one range, 0..LockEOF) its holders have, in the
// semantics of POSIX record locks. A holder (LockOwner) is one lock owner
// of one client: the kernel's lock owner of a process (fcntl) or of an
// open file (flock), within the mount that asked. A holder's own ranges
// never conflict with each other: setting a range replaces whatever the
// holder had there (an upgrade, a downgrade, an unlock), splitting its
// ranges around it, and ranges of one kind that touch are merged. Two
// holders conflict where their ranges overlap and one of them writes.
//
// These are pure functions of the table; locks.go keeps the tables in the
// store with the clients' lock sessions, whose expiry releases a dead
// client's locks.

// LockEOF ends a range that runs to the end of the file (and any growth).
const LockEOF = math.MaxUint64

// LockKind is a lock's mode.
type LockKind uint8

const (
	LockRead  LockKind = 1 // shared (F_RDLCK, LOCK_SH)
	LockWrite LockKind = 2 // exclusive (F_WRLCK, LOCK_EX)
)

// LockOwner is who holds a lock.
type LockOwner struct {
	Client string `cbor:"1,keyasint"` // the lock session of the mount
	Owner  uint64 `cbor:"2,keyasint"` // the kernel's lock owner within it
}

// RangeLock is one held range, [Start, End] (End inclusive, LockEOF: to
// the end).
type RangeLock struct {
	Holder LockOwner `cbor:"1,keyasint"`
	Kind   LockKind  `cbor:"2,keyasint"`
	Start  uint64    `cbor:"3,keyasint"`
	End    uint64    `cbor:"4,keyasint"`
	Pid    uint32    `cbor:"5,keyasint,omitempty"` // the holder's process, for F_GETLK
}

func (l RangeLock) overlaps(o RangeLock) bool { return l.Start <= o.End && o.Start <= l.End }

// lockConflict returns the first lock of another holder that req (a Read
// or Write) cannot coexist with.
func lockConflict(held []RangeLock, req RangeLock) (RangeLock, bool) {
	for _, l := range held {
		if l.Holder != req.Holder && l.overlaps(req) && (l.Kind == LockWrite || req.Kind == LockWrite) {
			return l, true
		}
	}
	return RangeLock{}, false
}

// lockSet returns the table with req's holder's locks over [req.Start,
// req.End] replaced by req (unlock: removed). It does not check
// conflicts. The result is sorted by holder, then start; held is not
// modified.
func lockSet(held []RangeLock, req RangeLock, unlock bool) []RangeLock {
	out := make([]RangeLock, 0, len(held)+2)
	for _, l := range held {
		if l.Holder != req.Holder || !l.overlaps(req) {
			out = append(out, l)
			continue
		}
		// Keep what lies outside req.
		if l.Start < req.Start {
			left := l
			left.End = req.Start - 1
			out = append(out, left)
		}
		if l.End > req.End {
			right := l
			right.Start = req.End + 1
			out = append(out, right)
		}
	}
	if !unlock {
		out = append(out, req)
	}
	sortLocks(out)
	return mergeLocks(out)
}

func lockLess(a, b RangeLock) bool {
	if a.Holder.Client != b.Holder.Client {
		return a.Holder.Client < b.Holder.Client
	}
	if a.Holder.Owner != b.Holder.Owner {
		return a.Holder.Owner < b.Holder.Owner
	}
	return a.Start < b.Start
}

func sortLocks(ls []RangeLock) {
	// Insertion sort: tables are small.
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && lockLess(ls[j], ls[j-1]); j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}

// mergeLocks joins a holder's ranges of one kind that overlap or touch
// (the input sorted by holder, then start).
func mergeLocks(ls []RangeLock) []RangeLock {
	out := ls[:0]
	for _, l := range ls {
		if n := len(out); n > 0 {
			p := &out[n-1]
			if p.Holder == l.Holder && p.Kind == l.Kind && (p.End == LockEOF || l.Start <= p.End+1) {
				if l.End > p.End {
					p.End = l.End
				}
				p.Pid = l.Pid
				continue
			}
		}
		out = append(out, l)
	}
	return out
}
