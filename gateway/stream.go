package gateway

import (
	"context"
	"errors"
	"hash"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/gateway/md5lanes"
)

// A body moves into a file in bufSize pieces, two in flight: one being read
// while the other is written, so neither side waits for the other and no
// object is ever held in memory whole.
const bufSize = 8 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// smallPool holds the buffers of bodies of up to smallIO bytes (and the
// byte past them a PUT reads): a fresh one per request cost its clearing
// and a share of the garbage collector's work, 10% of the CPU of 1 MiB GETs.
var smallPool = sync.Pool{New: func() any { b := make([]byte, smallIO+1); return &b }}

// etagMD5 hashes the bodies of concurrent uploads for their ETags together,
// in the lanes of a SIMD kernel: with 16 at once, a seventh of the CPU of
// crypto/md5, which was the largest part of a large PUT's.
var etagMD5 md5lanes.Server

// readFull reads until p is full or the reader ends (io.EOF only when
// nothing was read).
func readFull(r io.Reader, p []byte) (int, error) {
	n, err := io.ReadFull(r, p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	if err == io.EOF && n > 0 {
		return n, io.EOF
	}
	return n, err
}

// copyIn writes body into f from offset off, feeding every byte to hashes,
// and returns the bytes written. More than limit bytes is EntityTooLarge.
func copyIn(ctx context.Context, f *client.File, off int64, body io.Reader, limit int64, hashes ...hash.Hash) (int64, error) {
	return copyInSized(ctx, f, off, body, -1, limit, hashes...)
}

// copyInSized is copyIn for a body whose size is known (-1: unknown).
func copyInSized(ctx context.Context, f *client.File, off int64, body io.Reader, size, limit int64, hashes ...hash.Hash) (int64, error) {
	if size < 0 || size >= noCacheWriteMin {
		ctx = client.NoCache(ctx)
	}
	if size >= 0 && size <= smallIO && size <= limit {
		// One piece: read it whole (one byte more, to see a longer body).
		bp := smallPool.Get().(*[]byte)
		defer smallPool.Put(bp)
		buf := (*bp)[:size+1]
		n, err := readFull(body, buf)
		if err != nil && err != io.EOF {
			return 0, err
		}
		if int64(n) > size {
			if int64(n) > limit {
				return 0, errCode("EntityTooLarge", "")
			}
			// Longer than announced: fall back to streaming the rest.
			return 0, errCode("IncompleteBody", "The body is longer than its Content-Length.")
		}
		for _, h := range hashes {
			h.Write(buf[:n])
		}
		if n > 0 {
			if _, err := f.WriteAtContext(ctx, buf[:n], off); err != nil {
				return 0, err
			}
		}
		return int64(n), nil
	}
	// Three stages, each on its own goroutine: reading the body (and the
	// SigV4 payload hash that checks it as it is read), the other hashes
	// (the ETag's MD5, a checksum the client asked for), and the chunk
	// writes. A piece's buffer goes back to the pool when both the hashes
	// and the write are done with it.
	type piece struct {
		buf  *[]byte
		n    int
		off  int64
		left *atomic.Int32
	}
	release := func(p piece) {
		if p.left.Add(-1) == 0 {
			bufPool.Put(p.buf)
		}
	}
	work := make(chan piece, 1)
	werr := make(chan error, 1)
	go func() {
		var first error
		for p := range work {
			if first == nil {
				if _, err := f.WriteAtContext(ctx, (*p.buf)[:p.n], p.off); err != nil {
					first = err
				}
			}
			release(p)
		}
		werr <- first
	}()
	var hashing chan piece
	hashed := make(chan struct{})
	if len(hashes) > 0 {
		hashing = make(chan piece, 1)
		go func() {
			defer close(hashed)
			for p := range hashing {
				for _, h := range hashes {
					h.Write((*p.buf)[:p.n])
				}
				release(p)
			}
		}()
	} else {
		close(hashed)
	}
	var total int64
	var rerr error
	for {
		b := bufPool.Get().(*[]byte)
		n, err := readFull(body, *b)
		if n > 0 {
			if total+int64(n) > limit {
				bufPool.Put(b)
				rerr = errCode("EntityTooLarge", "")
				break
			}
			p := piece{buf: b, n: n, off: off + total, left: new(atomic.Int32)}
			p.left.Store(1)
			if hashing != nil {
				p.left.Store(2)
				hashing <- p
			}
			work <- p
			total += int64(n)
		} else {
			bufPool.Put(b)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			rerr = err
			break
		}
	}
	close(work)
	if hashing != nil {
		close(hashing)
	}
	<-hashed
	if e := <-werr; rerr == nil {
		rerr = e
	}
	return total, rerr
}

// readerFrom adapts a client.File region into an io.Reader.
type fileReader struct {
	ctx context.Context
	f   *client.File
	off int64
	end int64
}

func (r *fileReader) Read(p []byte) (int, error) {
	if r.off >= r.end {
		return 0, io.EOF
	}
	if int64(len(p)) > r.end-r.off {
		p = p[:r.end-r.off]
	}
	n, err := r.f.ReadAtContext(r.ctx, p, r.off)
	r.off += int64(n)
	if err == io.EOF {
		if r.off < r.end {
			// The file is shorter than it was when we looked: the object
			// changed under us, which S3 readers cannot be told mid-body.
			return n, io.ErrUnexpectedEOF
		}
		err = nil
	}
	return n, err
}

// smallIO: bodies up to this size move in one piece, without the
// pipeline's goroutine and 8 MiB buffer.
const smallIO = 1 << 20

// noCacheWriteMin: a body this large, or of unknown length, is written
// past the storage nodes' page cache (client.NoCache). A smaller one goes
// through the cache, so a GET soon after it is served from memory, as a
// MinIO on the same disk serves it: its chunks are staged (bodyCtx), so
// the cache's write-back costs one fdatasync per data file at the PUT's
// end, not one per chunk. On this machine, 48 PUTs of 64 MiB at 8 clients
// then a GET of each: 274-276 MiB/s and 2,032-2,058 through the cache
// against 287-301 and 1,232-1,258 past it (the GETs read 3 GiB from the
// disk), for about 1 s more CPU per GiB; 1 MiB objects at 16 clients: PUT
// 193 against 176, GET 1,235 against 647. Past this size an object would
// mostly push others out of the cache.
const noCacheWriteMin = 256 << 20

// noCacheReadMin: a GET of this many bytes reads past the cache: from the
// disk direct, it costs half the CPU of a read that fills the cache. The
// storage engine still reads a chunk it read lately through the cache, so
// an object read again and again is served from memory. A smaller GET
// reads through the cache, where its object's PUT left it.
const noCacheReadMin = 256 << 20

// copyOut sends [off, off+n) of f to w, reading ahead. A large range is
// read past the storage nodes' page cache, as it was written.
func copyOut(ctx context.Context, w io.Writer, f *client.File, off, n int64) error {
	if n >= noCacheReadMin {
		ctx = client.NoCache(ctx)
	}
	if n <= smallIO {
		bp := smallPool.Get().(*[]byte)
		defer smallPool.Put(bp)
		buf := (*bp)[:n]
		k, err := readFull(&fileReader{ctx: ctx, f: f, off: off, end: off + n}, buf)
		if err != nil && err != io.EOF {
			return err
		}
		if int64(k) != n {
			return io.ErrUnexpectedEOF
		}
		_, err = w.Write(buf)
		return err
	}
	// Each chunk read goes to the socket as it is, the next ones read
	// meanwhile (client.File.StreamTo).
	if _, err := f.StreamTo(ctx, w, off, n); err != nil {
		return err
	}
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	return nil
}
