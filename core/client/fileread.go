package client

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/rpc"
)

// The file read path: a read is cut into per-chunk pieces; large pieces go
// out one RPC each (several storage services then work on them in
// parallel), while small pieces are gathered so that all of those a storage
// service holds travel in one batch RPC. One piece alone takes the lean path.

const (
	smallPiece = 128 << 10 // pieces up to this size are batched
	batchBytes = 1 << 20   // at most this much data per batch
	batchIOs   = 256       // and at most this many pieces
)

// readJob is one piece of a read and where its bytes go.
type readJob struct {
	io  ReadIO
	dst []byte
}

// readJobsFor cuts the file range [off, off+len(p)) into jobs that fill p.
func (f *File) readJobsFor(p []byte, off uint64) ([]readJob, error) {
	if inl := f.inode.Inline; len(inl) > 0 {
		fillInline(p, off, inl) // the bytes came with the inode
		return nil, nil
	}
	pieces, err := f.inode.Layout.Split(off, uint64(len(p)))
	if err != nil {
		return nil, err
	}
	jobs := make([]readJob, len(pieces))
	for i, pc := range pieces {
		jobs[i] = readJob{io: f.readIOFor(pc), dst: p[pc.OffsetInBuffer : pc.OffsetInBuffer+uint64(pc.Length)]}
	}
	return jobs, nil
}

// planReads groups jobs into units, each one window slot: a large piece
// alone, small pieces in batches (ordered by chain and chunk, so a batch
// holds few chains and lands on few storage services).
func planReads(jobs []readJob) [][]int {
	var units [][]int
	var small []int
	for i, j := range jobs {
		if j.io.Length > smallPiece {
			units = append(units, []int{i})
		} else {
			small = append(small, i)
		}
	}
	slices.SortFunc(small, func(a, b int) int {
		x, y := jobs[a].io, jobs[b].io
		switch {
		case x.Chain != y.Chain:
			return int(x.Chain) - int(y.Chain)
		case x.Chunk != y.Chunk:
			return bytes.Compare(x.Chunk[:], y.Chunk[:])
		}
		return int(x.Offset) - int(y.Offset)
	})
	var cur []int
	size := 0
	for _, i := range small {
		n := int(jobs[i].io.Length)
		if len(cur) > 0 && (len(cur) >= batchIOs || size+n > batchBytes) {
			units = append(units, cur)
			cur, size = nil, 0
		}
		cur = append(cur, i)
		size += n
	}
	if len(cur) > 0 {
		units = append(units, cur)
	}
	return units
}

// readJobs runs the jobs under the FS's window.
func (f *File) readJobs(ctx context.Context, jobs []readJob) error {
	if len(jobs) == 0 {
		return nil
	}
	cio := f.fs.chunks
	if len(jobs) == 1 {
		return runBounded(ctx, cio.Window(), 1, func(ctx context.Context, _ int) error {
			return readInto(ctx, cio, jobs[0])
		})
	}
	units := planReads(jobs)
	return runBounded(ctx, cio.Window(), len(units), func(ctx context.Context, u int) error {
		idx := units[u]
		if len(idx) == 1 {
			return readInto(ctx, cio, jobs[idx[0]])
		}
		ios := make([]ReadIO, len(idx))
		for k, i := range idx {
			ios[k] = jobs[i].io
		}
		for k, r := range cio.BatchRead(ctx, ios, false) {
			if err := fillPiece(jobs[idx[k]].dst, r.Data, r.Err); err != nil {
				return err
			}
		}
		return nil
	})
}

// fillPiece copies a piece's data into dst; a missing chunk, or the part past
// a chunk's end (inside the file), is a hole and reads as zeros.
func fillPiece(dst, data []byte, err error) error {
	if errors.Is(err, ErrChunkNotFound) {
		err, data = nil, nil
	}
	if err != nil {
		return err
	}
	c := copy(dst, data)
	clear(dst[c:])
	return nil
}

// readInto reads one job's piece, offering its destination as the reply's
// memory: a storage service in this process reads straight into it
// (rpc.ReplyInto), one service over the network answers in a pooled buffer
// that fillOnce copies from. Each call here returns before its caller does
// (runBounded waits for every task), as the offer requires.
func readInto(ctx context.Context, cio *ChunkIO, j readJob) error {
	data, err := cio.Read(rpc.ReplyInto(ctx, j.dst), j.io, false)
	if err == nil && rpc.InMemory(data, j.dst) {
		clear(j.dst[len(data):]) // past the chunk's end: a hole
		return nil
	}
	return fillOnce(j.dst, data, err)
}

// fillOnce is fillPiece for data nothing else holds (a Read's answer), which
// then goes back to the RPC buffer pool: the next read of a large piece
// reuses its memory instead of having fresh pages zeroed and faulted in.
func fillOnce(dst, data []byte, err error) error {
	err = fillPiece(dst, data, err)
	rpc.ReleasePayload(data)
	return err
}

// ReadReq is one range of a ReadV: Buf is filled from file offset Off.
type ReadReq struct {
	Off int64
	Buf []byte
	// N is set by ReadV: the bytes read, less than len(Buf) only at the
	// end of the file.
	N int
}

// ReadV reads many ranges at once, as one read: every small piece of every
// request is batched with the others that live on the same storage service,
// so thousands of small reads cost a few RPCs. Holes read as zeros; a range
// past the end of the file reads short (N). The first error fails the call.
func (f *File) ReadV(ctx context.Context, reqs []ReadReq) (err error) {
	if m := f.fs.metrics; m != nil {
		defer func(start time.Time) {
			n := 0
			if err == nil {
				for i := range reqs {
					n += reqs[i].N
				}
			}
			m.done(m.readv, "readv", start, m.readBytes, n, err)
		}(time.Now())
	}
	return f.readV(ctx, reqs)
}

func (f *File) readV(ctx context.Context, reqs []ReadReq) error {
	if err := f.spill(ctx); err != nil { // this handle's held writes are read from storage
		return pathErr("read", f.path, err)
	}
	size := f.Size()
	var jobs []readJob
	for i := range reqs {
		r := &reqs[i]
		r.N = 0
		if r.Off < 0 {
			return pathErr("read", f.path, syscall.EINVAL)
		}
		if uint64(r.Off) >= size || len(r.Buf) == 0 {
			continue
		}
		n := min(uint64(len(r.Buf)), size-uint64(r.Off))
		js, err := f.readJobsFor(r.Buf[:n], uint64(r.Off))
		if err != nil {
			return pathErr("read", f.path, err)
		}
		jobs = append(jobs, js...)
		r.N = int(n)
	}
	if err := f.readJobs(ctx, jobs); err != nil {
		return pathErr("read", f.path, err)
	}
	return nil
}

// readCached reads [off, off+len(p)) of a read-only File through the memory
// cache: blocks held under the Gen the File was opened at are copied out, the
// rest are fetched (each run of missing blocks in one read) and kept. size is
// the File's length; the last block is short.
func (f *File) readCached(ctx context.Context, c *blockCache, p []byte, off, size uint64) error {
	in := f.Inode()
	first, last := off/CacheBlock, (off+uint64(len(p))-1)/CacheBlock
	var missing []uint64
	for b := first; b <= last; b++ {
		lo, hi := b*CacheBlock, min((b+1)*CacheBlock, size)
		var dst []byte
		if lo >= off && hi <= off+uint64(len(p)) {
			dst = p[lo-off : hi-off] // the whole block lands in p
		}
		data, ok := c.getInto(blockKey{in.ID, in.Gen, b}, dst)
		if !ok || uint64(len(data)) < hi-lo {
			missing = append(missing, b) // absent, or short of a length that grew
			continue
		}
		if dst == nil || &data[0] != &dst[0] {
			copyOverlap(p, off, data, lo)
		}
	}
	for i := 0; i < len(missing); {
		j := i
		for j+1 < len(missing) && missing[j+1] == missing[j]+1 {
			j++
		}
		lo, hi := missing[i]*CacheBlock, min((missing[j]+1)*CacheBlock, size)
		stamp := c.begin()
		// Straight into p when it holds the whole run (aligned reads, as
		// the kernel's), else into a buffer of the run's own.
		var buf []byte
		inP := lo >= off && hi <= off+uint64(len(p))
		if inP {
			buf = p[lo-off : hi-off]
		} else {
			buf = make([]byte, hi-lo)
		}
		jobs, err := f.readJobsFor(buf, lo)
		if err == nil {
			err = f.readJobs(ctx, jobs)
		}
		if err != nil {
			return err
		}
		for b := missing[i]; b <= missing[j]; b++ {
			blo := b*CacheBlock - lo
			block := append([]byte(nil), buf[blo:min(blo+CacheBlock, uint64(len(buf)))]...)
			c.put(blockKey{in.ID, in.Gen, b}, block, stamp)
			if !inP {
				copyOverlap(p, off, block, b*CacheBlock)
			}
		}
		i = j + 1
	}
	return nil
}

// copyOverlap copies into p (file range [off, off+len(p))) the part of data
// (file range [at, at+len(data))) the two share.
func copyOverlap(p []byte, off uint64, data []byte, at uint64) {
	lo, hi := max(off, at), min(off+uint64(len(p)), at+uint64(len(data)))
	if lo < hi {
		copy(p[lo-off:hi-off], data[lo-at:hi-at])
	}
}

// fillInline fills p, the file range [off, off+len(p)), from an inline
// file's bytes: zeros past them (up to the length, which the caller keeps
// p within).
func fillInline(p []byte, off uint64, inline []byte) {
	n := 0
	if off < uint64(len(inline)) {
		n = copy(p, inline[off:])
	}
	clear(p[n:])
}
