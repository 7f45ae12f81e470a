package client

import (
	"context"
	"errors"
	"io"
	"syscall"

	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/rpc"
)

// The streaming read: a long range sent on to a writer (an S3 GET's body)
// goes piece by piece, each chunk read's payload written as it is, in file
// order, while the next pieces are being read. Read into a buffer of the
// caller's first, every byte was copied once more on its way to the socket:
// a tenth of the CPU of a large GET.

// streamAhead bounds the pieces read but not yet written. Deep enough to
// cover a read from the disk: a first read of a large object comes past the
// page cache, about 1.3 ms per 1 MiB piece here, while writing a piece to
// the socket takes a third of that, so two ahead left the writer waiting
// whenever a read ran slow (8 streams of first 64 MiB GETs: median 1,498
// MiB/s and a slowest GET of up to 838 ms with two ahead; 1,707 MiB/s and
// at most 431 ms with eight). Shallow enough that a piece still goes to the
// socket soon after its read: 16 ahead, 16 streams held 256 MiB between
// read and write and a hot 64 MiB GET cost a quarter more CPU; at eight,
// hot re-reads at 16 streams ran as fast as at two.
const streamAhead = 8

// streamSpan bounds how much of the range one Split cuts at a time, so a
// stream of many GiB never holds all its pieces at once.
const streamSpan = 256 << 20

// zeros is what a hole in a streamed range is written from.
var zeros [64 << 10]byte

// StreamTo writes [off, off+n) of the file to w, in order, and returns the
// bytes written. A range past the end of the file is written up to the end
// and then fails with io.ErrUnexpectedEOF; holes are written as zeros. Reads
// run ahead of the writer by at most streamAhead pieces, within the FS's
// window; an error of w or of a read ends the stream and the reads ahead.
func (f *File) StreamTo(ctx context.Context, w io.Writer, off, n int64) (int64, error) {
	if off < 0 || n < 0 {
		return 0, pathErr("read", f.path, syscall.EINVAL)
	}
	if err := f.spill(ctx); err != nil { // this handle's held writes are read from storage
		return 0, pathErr("read", f.path, err)
	}
	size := f.Size()
	avail := uint64(0)
	if uint64(off) < size {
		avail = min(uint64(n), size-uint64(off))
	}
	var written int64
	var err error
	if f.fs.blocks.Load() != nil || f.session != nil || len(f.inode.Inline) > 0 || avail <= smallPiece {
		// Through the cache, a writer's view or the inode's own bytes: the
		// read path that knows them, a buffer at a time.
		written, err = f.streamBuffered(ctx, w, uint64(off), avail)
	} else {
		written, err = f.streamPieces(ctx, w, uint64(off), avail)
	}
	if err == nil && written < n {
		err = io.ErrUnexpectedEOF // the file is shorter than the range
	}
	return written, err
}

// streamBuffered is StreamTo through ReadAt and one buffer.
func (f *File) streamBuffered(ctx context.Context, w io.Writer, off, n uint64) (int64, error) {
	buf := make([]byte, min(n, 1<<20))
	var written int64
	for done := uint64(0); done < n; {
		if err := ctx.Err(); err != nil { // a cache hit would not see it
			return written, err
		}
		p := buf[:min(uint64(len(buf)), n-done)]
		k, err := f.readAt(ctx, p, int64(off+done))
		if k > 0 {
			m, werr := w.Write(p[:k])
			written += int64(m)
			if werr != nil {
				return written, werr
			}
		}
		done += uint64(k)
		if err == io.EOF || (err == nil && k < len(p)) {
			return written, nil // shorter than it was: the caller says so
		}
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// fetched is one piece's read, on its way to the writer.
type fetched struct {
	want uint32 // the piece's length
	data []byte // pooled (rpc.ReleasePayload once written)
	err  error
}

// streamPieces is StreamTo past any cache: a launcher reads the pieces ahead
// and queues their answers in file order; this goroutine writes them.
func (f *File) streamPieces(ctx context.Context, w io.Writer, off, n uint64) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan chan fetched, streamAhead-1)
	go f.launchPieces(ctx, queue, off, n)
	var written int64
	var failed error
	for ch := range queue {
		r := <-ch
		if failed == nil {
			if r.err != nil && !errors.Is(r.err, ErrChunkNotFound) {
				failed = pathErr("read", f.path, r.err)
			} else {
				var k int64
				k, failed = writePiece(w, r)
				written += k
			}
			if failed != nil {
				cancel() // the launcher stops; the reads ahead end
			}
		}
		rpc.ReleasePayload(r.data)
	}
	return written, failed
}

// launchPieces starts the reads of [off, off+n) in file order, each under a
// window slot, and queues a channel for each that gets its answer. It closes
// queue when every piece is queued, or at the first failure to start one
// (queued with the error). A few readers of its own do the reads: a
// goroutine per piece would grow its stack from scratch in every call's
// decoding, 3% of the CPU of a hot GET.
func (f *File) launchPieces(ctx context.Context, queue chan<- chan fetched, off, n uint64) {
	defer close(queue)
	cio := f.fs.chunks
	win := cio.Window()
	reads := make(chan pieceRead)
	defer close(reads)
	// The writer waits on one piece, the queue holds streamAhead-1 more and
	// this goroutine one: no more reads than that are ever running, nor more
	// than the range has pieces (a 2 MiB GET needs no nine readers).
	readers := streamAhead + 1
	if cs := uint64(f.inode.Layout.ChunkSize); cs > 0 {
		readers = int(min(uint64(readers), n/cs+2)) // +2: a range cut at both ends
	}
	for range readers {
		go readPieces(ctx, cio, win, reads)
	}
	for done := uint64(0); done < n; {
		span := min(n-done, streamSpan)
		pieces, err := f.inode.Layout.Split(off+done, span)
		if err != nil {
			queue <- failedPiece(err)
			return
		}
		for _, pc := range pieces {
			if err := win.Acquire(ctx); err != nil {
				queue <- failedPiece(err)
				return
			}
			ch := make(chan fetched, 1)
			reads <- pieceRead{rio: f.readIOFor(pc), answer: ch}
			select {
			case queue <- ch:
			case <-ctx.Done():
				rpc.ReleasePayload((<-ch).data)
				return
			}
		}
		done += span
	}
}

// pieceRead is one piece for readPieces to read, and where its answer goes.
type pieceRead struct {
	rio    ReadIO
	answer chan<- fetched // buffered: the reader never waits on it
}

// readPieces reads the pieces it is given, each under the window slot
// taken for it, until reads is closed.
func readPieces(ctx context.Context, cio *ChunkIO, win *Window, reads <-chan pieceRead) {
	for r := range reads {
		data, err := cio.Read(ctx, r.rio, false)
		win.Release()
		r.answer <- fetched{want: r.rio.Length, data: data, err: err}
	}
}

func failedPiece(err error) chan fetched {
	ch := make(chan fetched, 1)
	ch <- fetched{err: err}
	return ch
}

// readIOFor is the chunk read of one piece of the file.
func (f *File) readIOFor(pc layout.Piece) ReadIO {
	l := f.inode.Layout
	return ReadIO{Chain: f.chains[pc.ChunkIndex%uint64(len(f.chains))], Chunk: layout.MakeChunkID(f.inode.DataID(), pc.ChunkIndex),
		Offset: pc.OffsetInChunk, Length: pc.Length, Base: layout.LayerChunks(f.inode.Layers, pc.ChunkIndex, l.ChunkSize)}
}

// writePiece writes one piece's bytes: its data, then zeros for a missing
// chunk (r.err is ErrChunkNotFound) or the part past a chunk's end (a hole).
func writePiece(w io.Writer, r fetched) (int64, error) {
	data := r.data
	if r.err != nil {
		data = nil
	}
	data = data[:min(len(data), int(r.want))]
	written, err := w.Write(data)
	for left := int(r.want) - written; err == nil && left > 0; {
		var k int
		k, err = w.Write(zeros[:min(left, len(zeros))])
		written += k
		left -= k
	}
	return int64(written), err
}
