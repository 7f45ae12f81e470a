package fusefs

import (
	"context"
	"sync"
)

// Write-behind: the kernel sends one WRITE at a time per file descriptor
// (no writeback cache, for cross-client consistency), so a write that waits
// for storage leaves the chains idle between requests. Instead a WRITE is
// answered once its data is copied and queued, and up to maxInflight writes
// of an inode run at once. Everything that must see the data waits for the
// queue first: reads (of this mount), getattr sizes, truncate, fsync, and
// close (FLUSH) — so close-to-open and fsync keep their meaning, and a
// failed write is reported by the next fsync or close (as NFS does), or by
// the next write. A write that only fills the bytes a small file holds for
// its inline close needs no storage, so it runs in its request (handle.holds).

// maxInflight is how many queued writes of one inode run at once.
const maxInflight = 16

type wrange struct{ off, end uint64 }

// queue is an inode's write-behind state (in openInode).
type queue struct {
	mu       sync.Mutex
	cond     *sync.Cond
	inflight map[*wrange]struct{}
	end      uint64 // the largest end of a queued write (0 when idle)
	err      error  // the first failure not yet reported
}

func (q *queue) init() {
	q.cond = sync.NewCond(&q.mu)
	q.inflight = map[*wrange]struct{}{}
}

// begin waits until [off,end) overlaps no queued write and there is room,
// then registers it. Overlapping writes thus land in the order they came.
func (q *queue) begin(off, end uint64) (*wrange, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.err != nil {
			err := q.err
			q.err = nil
			return nil, err
		}
		if len(q.inflight) < maxInflight && !q.overlaps(off, end) {
			break
		}
		q.cond.Wait()
	}
	r := &wrange{off, end}
	q.inflight[r] = struct{}{}
	q.end = max(q.end, end)
	return r, nil
}

func (q *queue) overlaps(off, end uint64) bool {
	for r := range q.inflight {
		if off < r.end && r.off < end {
			return true
		}
	}
	return false
}

// done ends a queued write.
func (q *queue) done(r *wrange, err error) {
	q.mu.Lock()
	delete(q.inflight, r)
	if err != nil && q.err == nil {
		q.err = err
	}
	if len(q.inflight) == 0 {
		q.end = 0 // the writers' files know every completed write
	}
	q.cond.Broadcast()
	q.mu.Unlock()
}

// drain waits for every queued write and returns (and clears) a failure.
func (q *queue) drain() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.inflight) > 0 {
		q.cond.Wait()
	}
	err := q.err
	q.err = nil
	return err
}

// wait waits for every queued write, leaving a failure for drain.
func (q *queue) wait() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.inflight) > 0 {
		q.cond.Wait()
	}
}

// queuedEnd is the largest end of a queued write (0 if none).
func (q *queue) queuedEnd() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.end
}

var writeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1<<20); return &b }}

// writeBehind queues a write through h and returns once it is queued.
func (f *fileSystem) writeBehind(h *handle, data []byte, off int64) error {
	r, err := h.oi.q.begin(uint64(off), uint64(off)+uint64(len(data)))
	if err != nil {
		return err
	}
	bp := writeBufs.Get().(*[]byte)
	buf := append((*bp)[:0], data...)
	f.behind.Add(1)
	go func() {
		ctx, cancel := context.WithTimeout(f.base, f.opts.OpTimeout)
		_, err := h.writeAt(ctx, f, buf, off)
		cancel()
		h.oi.q.done(r, err)
		*bp = buf[:0]
		writeBufs.Put(bp)
	}()
	return nil
}
