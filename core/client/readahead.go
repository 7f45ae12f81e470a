package client

import (
	"context"
	"sync"
	"time"
)

// Read-ahead. A read-only File that is read sequentially fetches the blocks
// ahead of the reader before it asks, several at once, so the storage
// services' disks work on a deep queue instead of one request at a time (a
// FUSE mount sees a few kernel read-ahead requests in flight; a cold disk
// then serves about one block per seek). The window starts at two blocks
// and doubles with each sequential read up to maxAheadBlocks; a read
// elsewhere ends it and drops what was fetched. Blocks the reader has
// passed are let go at once.
//
// Only read-only Files read ahead, and what they fetched is as fresh as a
// read made at that moment: the open's view. Invalidate drops it (the mount
// calls it when it writes the file through another handle).

const (
	aheadBlock     = 1 << 20 // bytes per fetched block, aligned
	minAheadBlocks = 2
	maxAheadBlocks = 16
	// aheadBudget bounds the bytes fetched ahead and not yet read, over
	// every File of an FS: past it, reads go on without read-ahead.
	aheadBudget = 256 << 20
	// aheadTimeout bounds one block's fetch: it runs on its own context,
	// so that a reader giving up does not fail the block for the next one.
	aheadTimeout = 30 * time.Second
)

// aheadWindow decides what to fetch: reads in, block ranges out. A pure
// state machine over offsets. A read counts as part of the stream when it
// lands near the stream's front (the largest end read so far) and the
// stream has read at least half the bytes it spans: a mount's kernel sends
// its read-ahead requests several at once, and they arrive in any order,
// while random reads that happen to fall near each other cover little.
type aheadWindow struct {
	on      bool   // a stream is being watched
	start   uint64 // where it began
	front   uint64 // the largest end read in it
	covered uint64 // bytes read in it
	blocks  uint64 // window in blocks; 0 until a second read follows the first
	asked   uint64 // blocks [0, asked) have been asked for
}

// observe takes a read [off, off+n) of a file of size bytes and returns
// the blocks to fetch now, [from, to), and whether the read is part of the
// stream (false: a new stream starts here, and what was fetched should go).
func (w *aheadWindow) observe(off, n, size uint64) (from, to uint64, inStream bool) {
	end := off + n
	slack := (max(w.blocks, minAheadBlocks) + 1) * aheadBlock
	near := w.on && off+slack >= w.front && off <= w.front+slack && off >= w.start
	if !near || 2*(w.covered+n) < max(w.front, end)-w.start {
		*w = aheadWindow{on: true, start: off, front: end, covered: n}
		return 0, 0, false
	}
	w.front, w.covered = max(w.front, end), w.covered+n
	w.blocks = min(max(2*w.blocks, minAheadBlocks), maxAheadBlocks)
	last := min(blocksOf(w.front+w.blocks*aheadBlock), blocksOf(size))
	from = max(w.asked, off/aheadBlock)
	if last <= from {
		return 0, 0, true
	}
	w.asked = last
	return from, last, true
}

// behind is the first block the stream may still read: blocks below it
// are let go.
func (w *aheadWindow) behind() uint64 {
	if b := w.front / aheadBlock; b > 2 {
		return b - 2
	}
	return 0
}

// blocksOf is the number of blocks that hold n bytes.
func blocksOf(n uint64) uint64 { return (n + aheadBlock - 1) / aheadBlock }

// aheadBlockState is one fetched (or fetching) block.
type aheadBlockState struct {
	done chan struct{}
	data []byte // short at the end of the file
	err  error
}

// readAhead is a File's read-ahead: the window and the blocks.
type readAhead struct {
	mu     sync.Mutex
	win    aheadWindow
	gen    uint64 // bumped by Invalidate: fetches of an older gen are dropped
	blocks map[uint64]*aheadBlockState
}

// tryAhead serves the read [off, off+len(p)) from read-ahead when the read
// is sequential, starting the fetches the window asks for. ok is false when
// the read should take the plain path.
func (f *File) tryAhead(ctx context.Context, p []byte, off, size uint64) (ok bool, err error) {
	ra := &f.ahead
	ra.mu.Lock()
	from, to, inStream := ra.win.observe(off, uint64(len(p)), size)
	if !inStream {
		ra.dropLocked(f.fs, 0, ^uint64(0))
		ra.mu.Unlock()
		return false, nil
	}
	if ra.blocks == nil {
		ra.blocks = map[uint64]*aheadBlockState{}
	}
	for b := from; b < to; b++ {
		if _, ok := ra.blocks[b]; ok {
			continue
		}
		if f.fs.aheadBytes.Add(aheadBlock) > aheadBudget {
			f.fs.aheadBytes.Add(-aheadBlock)
			break
		}
		st := &aheadBlockState{done: make(chan struct{})}
		ra.blocks[b] = st
		f.fs.aheadBlocks.Add(1)
		go f.fetchBlock(st, b, size, ra.gen)
	}
	first, last := off/aheadBlock, (off+uint64(len(p))-1)/aheadBlock
	need := make([]*aheadBlockState, 0, last-first+1)
	for b := first; b <= last; b++ {
		st, ok := ra.blocks[b]
		if !ok {
			ra.mu.Unlock()
			return false, nil // not fetched (over budget): the plain path
		}
		need = append(need, st)
	}
	ra.dropLocked(f.fs, 0, min(first, ra.win.behind())) // passed: let go
	ra.mu.Unlock()

	for i, st := range need {
		select {
		case <-st.done:
		case <-ctx.Done():
			return true, ctx.Err()
		}
		if st.err != nil {
			f.dropBlock(first + uint64(i))
			return false, nil // the plain path reports (or recovers from) it
		}
		b := first + uint64(i)
		lo := max(off, b*aheadBlock)
		hi := min(off+uint64(len(p)), b*aheadBlock+uint64(len(st.data)))
		if hi < lo || uint64(len(st.data)) < min(aheadBlock, size-b*aheadBlock) {
			return false, nil // the file grew or shrank under it
		}
		copy(p[lo-off:hi-off], st.data[lo-b*aheadBlock:hi-b*aheadBlock])
	}
	return true, nil
}

// fetchBlock reads block b into st.
func (f *File) fetchBlock(st *aheadBlockState, b, size uint64, gen uint64) {
	defer close(st.done)
	lo := b * aheadBlock
	n := min(aheadBlock, size-lo)
	buf := make([]byte, n)
	ctx, cancel := context.WithTimeout(context.Background(), aheadTimeout)
	defer cancel()
	jobs, err := f.readJobsFor(buf, lo)
	if err == nil {
		err = f.readJobs(ctx, jobs)
	}
	st.data, st.err = buf, err
	f.ahead.mu.Lock()
	stale := f.ahead.gen != gen
	f.ahead.mu.Unlock()
	if stale {
		st.err = errAheadStale
	}
}

var errAheadStale = context.Canceled

func (f *File) dropBlock(b uint64) {
	f.ahead.mu.Lock()
	defer f.ahead.mu.Unlock()
	f.ahead.dropLocked(f.fs, b, b+1)
}

// dropLocked lets go of the blocks in [from, to).
func (ra *readAhead) dropLocked(fs *FS, from, to uint64) {
	for b := range ra.blocks {
		if b >= from && b < to {
			delete(ra.blocks, b)
			fs.aheadBytes.Add(-aheadBlock)
		}
	}
}

// Invalidate drops what the File read ahead: the file changed (the mount
// wrote it through another handle), so the next read goes to storage.
func (f *File) Invalidate() {
	ra := &f.ahead
	ra.mu.Lock()
	defer ra.mu.Unlock()
	ra.gen++
	ra.win = aheadWindow{}
	ra.dropLocked(f.fs, 0, ^uint64(0))
}
