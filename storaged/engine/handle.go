package engine

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// Handle is a reference to one version of a chunk. Its content stays
// readable (the block is not reused) until Release, whatever happens to the
// chunk meanwhile. A Handle may be read from several goroutines.
type Handle struct {
	e        *Engine
	key      Key
	v        *version
	content  []byte // an inline version's content, verified when loaded
	released atomic.Bool
}

// Key returns the chunk's key.
func (h *Handle) Key() Key { return h.key }

// Meta returns the metadata of the version the handle holds.
func (h *Handle) Meta() Meta { return h.v.meta }

// Release drops the handle's reference. Further reads fail with ErrInvalid;
// releasing twice is harmless. Release must not race with a ReadAt on the
// same handle (the block may be reused under the read).
func (h *Handle) Release() {
	if h.released.Swap(true) {
		return
	}
	if h.v.blk != nil {
		h.e.unref(h.v.blk)
	}
}

// ReadAt reads content at off into p. Every segment the read touches is
// verified against its CRC32C first; on a mismatch nothing is returned
// (ErrChecksum, counted in Stats). Like io.ReaderAt it returns io.EOF with
// a short count when the read reaches past Len.
func (h *Handle) ReadAt(p []byte, off int64) (int, error) {
	return h.readAt(p, off, false)
}

// ReadAtUncached is ReadAt for a large read whose bytes need not stay in
// the page cache (a large S3 object's GET): its whole aligned runs come
// from the disk direct (see direct.go), unless the chunk was read so lately
// (see rereads.go).
func (h *Handle) ReadAtUncached(p []byte, off int64) (int, error) {
	return h.readAt(p, off, !h.e.rereads.again(keyHash(h.key)))
}

func (h *Handle) readAt(p []byte, off int64, direct bool) (int, error) {
	if h.released.Load() {
		return 0, fmt.Errorf("engine: read %v: %w: handle released", h.key, ErrInvalid)
	}
	if off < 0 {
		return 0, fmt.Errorf("engine: read %v: %w: negative offset %d", h.key, ErrInvalid, off)
	}
	size := int64(h.v.meta.Len)
	if off >= size {
		if len(p) == 0 && off == size {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := min(int64(len(p)), size-off)
	if n == 0 {
		return 0, nil
	}
	if h.v.inline {
		copy(p[:n], h.content[off:])
	} else if err := h.e.readVerified(h.key, h.v, p[:n], off, direct); err != nil {
		clear(p[:n])
		return 0, err
	}
	if n < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// segPool holds MaxSegmentSize scratch buffers for partial-segment reads and
// read-modify-write of edge segments.
var segPool = sync.Pool{New: func() any { b := make([]byte, MaxSegmentSize); return &b }}

func getSeg() *[]byte  { return segPool.Get().(*[]byte) }
func putSeg(b *[]byte) { segPool.Put(b) }

// readVerified fills p with content [off, off+len(p)) of v, which must lie
// within v's length. Runs of whole segments are read straight into p (one
// pread) and verified in place; partial segments at either end go through
// a scratch buffer because their CRC covers bytes outside p. direct: the
// runs come past the page cache.
func (e *Engine) readVerified(k Key, v *version, p []byte, off int64, direct bool) error {
	f, loc := e.alloc.file(v.blk.loc), v.blk.loc
	size := int64(v.meta.Len)
	end := off + int64(len(p))
	s := off / e.seg
	for pos := off; pos < end; {
		segLo := s * e.seg
		segHi := min(segLo+e.seg, size)
		if pos == segLo && segHi <= end {
			runEnd, t := segHi, s+1
			for runEnd < end {
				next := min(runEnd+e.seg, size)
				if next > end {
					break
				}
				runEnd, t = next, t+1
			}
			buf := p[pos-off : runEnd-off]
			if err := e.readContentVia(f, loc, buf, pos, direct); err != nil {
				return e.readFailed(k, v, s, err)
			}
			for i := s; i < t; i++ {
				lo := (i - s) * e.seg
				if got := crc(buf[lo:min(lo+e.seg, int64(len(buf)))]); got != v.crcs[i] {
					return e.checksumMismatch(k, v, i, got)
				}
			}
			pos, s = runEnd, t
			continue
		}
		sb := getSeg()
		seg := (*sb)[:segHi-segLo]
		if err := e.readContent(f, loc, seg, segLo); err != nil {
			putSeg(sb)
			return e.readFailed(k, v, s, err)
		}
		if got := crc(seg); got != v.crcs[s] {
			putSeg(sb)
			return e.checksumMismatch(k, v, s, got)
		}
		hi := min(segHi, end)
		copy(p[pos-off:hi-off], seg[pos-segLo:hi-segLo])
		putSeg(sb)
		pos, s = hi, s+1
	}
	return nil
}

func (e *Engine) checksumMismatch(k Key, v *version, seg int64, got uint32) error {
	e.checksumErrors.Add(1)
	e.log.Error("engine: checksum mismatch", "chunk", k.String(), "block", v.blk.loc.String(),
		"segment", seg, "want", fmt.Sprintf("%08x", v.crcs[seg]), "got", fmt.Sprintf("%08x", got))
	return fmt.Errorf("engine: read %v segment %d (block %v): %w", k, seg, v.blk.loc, ErrChecksum)
}

// readFailed reports an I/O error; a short data file counts as corruption,
// a failed read of the disk makes the engine read-only (its targets then
// stop serving, and the chains go on with their other replicas).
func (e *Engine) readFailed(k Key, v *version, seg int64, err error) error {
	switch {
	case isChecksum(err):
		e.checksumErrors.Add(1)
		e.log.Error("engine: chunk data missing", "chunk", k.String(), "block", v.blk.loc.String(), "segment", seg, "err", err)
	case errors.Is(err, ErrIO):
		e.setReadOnly("read error: " + err.Error())
	}
	return fmt.Errorf("engine: read %v segment %d: %w", k, seg, err)
}

// verifyPool holds scratch buffers for Verify.
var verifyPool = sync.Pool{New: func() any { b := make([]byte, verifyRead); return &b }}

// verifyRead is what Verify and Engine.Verify read per pread: whole segments
// of any size.
const verifyRead = 1 << 20

// Verify reads the handle's whole content and checks every segment against
// its CRC32C, returning none of it: ErrChecksum (counted in Stats, like a
// read) on the first mismatch. Scrubbing and repair use it to tell a corrupt
// replica from a good one without holding a whole chunk in memory.
func (h *Handle) Verify() error {
	if h.released.Load() {
		return fmt.Errorf("engine: verify %v: %w: handle released", h.key, ErrInvalid)
	}
	size := int64(h.v.meta.Len)
	if size == 0 || h.v.inline { // inline content was verified when loaded
		return nil
	}
	bp := verifyPool.Get().(*[]byte)
	defer verifyPool.Put(bp)
	for off := int64(0); off < size; off += int64(len(*bp)) {
		if err := h.e.readVerified(h.key, h.v, (*bp)[:min(int64(len(*bp)), size-off)], off, false); err != nil {
			return err
		}
	}
	return nil
}
