package engine

import (
	"fmt"

	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// fullRetry is how often a full engine lets a write try for space again;
// a removal (which frees blocks) lets the next write try at once.
const fullRetry = time.Second

// roomToResume is the space the file system must have beyond the reserve
// for a full engine to take writes again without a removal first: room for
// a block of the largest class.
const roomToResume = MaxChunkSize

// full is the state of an engine whose disk ran out of space. Unlike an I/O
// error, it passes: reads, commits and removals go on, writes fail fast with
// ErrNoSpace, and the first write that finds room again (after a removal
// freed blocks, or the file system grew) ends it, with no restart.
type full struct {
	on      atomic.Bool
	retryAt atomic.Int64 // unix ns before which writes fail without trying

	mu     sync.Mutex
	reason string
	since  time.Time
}

// refuse reports the error a write gets now, or nil to let it try.
func (f *full) refuse(now time.Time) error {
	if !f.on.Load() || now.UnixNano() >= f.retryAt.Load() {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Errorf("%w (full since %s: %s)", ErrNoSpace, f.since.Format(time.RFC3339), f.reason)
}

// set enters (or stays in) the full state after a write found no space.
func (f *full) set(now time.Time, reason string) (entered bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reason = reason
	f.retryAt.Store(now.Add(fullRetry).UnixNano())
	if f.on.Load() {
		return false
	}
	f.since = now
	f.on.Store(true)
	return true
}

// clear leaves the full state after a write found room; it reports whether
// the engine was full.
func (f *full) clear() bool { return f.on.Swap(false) }

// freed lets the next write try at once, and ends the full state: a block
// came free, so the engine has room again for some write (a write that
// finds none puts it back at once).
func (f *full) freed() {
	f.retryAt.Store(0)
	f.on.Store(false)
}

// state returns whether the engine is full, and why.
func (f *full) state() (bool, string) {
	if !f.on.Load() {
		return false, ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return true, f.reason
}

// checkRoom ends the full state when the file system has room again beyond
// the reserve (grown, or freed by others); Stats calls it, so that a node
// that reports a full disk notices space coming back without a write to try.
func (e *Engine) checkRoom() {
	if !e.full.on.Load() {
		return
	}
	var st unix.Statfs_t
	if unix.Statfs(e.alloc.dir, &st) != nil {
		return
	}
	if avail := int64(st.Bavail) * int64(st.Bsize); avail-e.alloc.reserve >= roomToResume && e.full.clear() {
		e.log.Info("engine: space again: writes resume", "free_bytes", avail)
	}
}
