package engine

import (
	"errors"
	"fmt"
	"os"
)

// writeCOW builds the new content in a fresh block of class cls and makes it
// durable. It fills crcs for the touched segments.
func (e *Engine) writeCOW(k Key, cur *version, c *change, cls uint8, crcs []uint32) (blockLoc, error) {
	loc, err := e.freshBlock(cls, c.direct)
	if err != nil {
		return loc, err
	}
	dst := e.alloc.file(loc)
	var src *os.File
	var srcLoc blockLoc
	if cur != nil && cur.blk != nil {
		src, srcLoc = e.alloc.file(cur.blk.loc), cur.blk.loc
	}
	keep := min(c.oldLen, c.newLen) // old bytes [0, keep) may survive
	sb := getSeg()
	defer putSeg(sb)
	fail := func(err error) (blockLoc, error) {
		e.alloc.free(loc)
		return blockLoc{}, err
	}

	// Untouched segments are copied verbatim (kernel-side) and keep their
	// CRCs: if they were corrupt they stay detectably corrupt.
	prefix := keep
	if c.first >= 0 {
		prefix = min(prefix, c.first*e.seg)
	}
	if err := e.copyContent(dst, loc, src, srcLoc, 0, prefix, *sb); err != nil {
		return fail(writeErr(err))
	}
	if c.first >= 0 {
		if err := e.writeTouched(k, cur, c, dst, loc, src, srcLoc, keep, crcs); err != nil {
			return fail(err)
		}
		if lo := (c.last + 1) * e.seg; lo < keep {
			if err := e.copyContent(dst, loc, src, srcLoc, lo, keep-lo, *sb); err != nil {
				return fail(writeErr(err))
			}
		}
	}
	if e.opts.Sync {
		if err := e.written(loc, c); err != nil {
			return fail(writeErr(err))
		}
	}
	return loc, nil
}

// freshBlock allocates a block of class cls for a write past the page
// cache (direct) or through it, with a new IV on an encrypted disk
// (cipher.go: a keystream position is written once per IV).
func (e *Engine) freshBlock(cls uint8, direct bool) (blockLoc, error) {
	loc, err := e.alloc.alloc(cls, direct)
	if err != nil {
		return loc, err
	}
	if e.ciph != nil {
		if loc.iv, err = newIV(); err != nil {
			e.alloc.free(loc)
			return blockLoc{}, err
		}
	}
	return loc, nil
}

// writeTouched writes segments [c.first, c.last] of the new content to dst
// and computes their CRCs. Segments made of written data only go straight
// from c.data (coalesced into one pwrite); the others are assembled in a
// scratch segment from the verified old segment, zeros and data.
func (e *Engine) writeTouched(k Key, cur *version, c *change, dst *os.File, dloc blockLoc, src *os.File, sloc blockLoc, keep int64, crcs []uint32) error {
	runLo, runHi := int64(-1), int64(-1)
	flush := func() error {
		if runLo < 0 {
			return nil
		}
		err := e.writeContent(dst, dloc, c.data[runLo-c.off:runHi-c.off], runLo, c.direct)
		runLo, runHi = -1, -1
		return writeErr(err)
	}
	sb := getSeg()
	defer putSeg(sb)
	for s := c.first; s <= c.last; s++ {
		segLo := s * e.seg
		segHi := min(segLo+e.seg, c.newLen)
		if c.n > 0 && segLo >= c.off && segHi <= c.off+c.n {
			crcs[s] = crc(c.data[segLo-c.off : segHi-c.off])
			if runLo < 0 {
				runLo = segLo
			}
			runHi = segHi
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		buf := (*sb)[:segHi-segLo]
		// Old bytes survive in [segLo, oldHi) except where data covers them.
		oldHi := min(segHi, keep)
		if segLo < oldHi && !(c.n > 0 && c.off <= segLo && c.off+c.n >= oldHi) {
			old := (*sb)[:min(segLo+e.seg, c.oldLen)-segLo]
			if err := e.readContent(src, sloc, old, segLo); err != nil {
				if isChecksum(err) {
					e.checksumErrors.Add(1)
				}
				return fmt.Errorf("read old segment %d: %w", s, err)
			}
			if got := crc(old); got != cur.crcs[s] {
				return e.checksumMismatch(k, cur, s, got)
			}
		}
		if zlo := max(segLo, keep); zlo < segHi {
			clear(buf[zlo-segLo:])
		}
		if c.n > 0 {
			if lo, hi := max(segLo, c.off), min(segHi, c.off+c.n); lo < hi {
				copy(buf[lo-segLo:hi-segLo], c.data[lo-c.off:hi-c.off])
			}
		}
		crcs[s] = crc(buf)
		if err := e.writeContentInPlace(dst, dloc, buf, segLo); err != nil {
			return writeErr(err)
		}
	}
	return flush()
}

// appendInPlace writes [oldLen, newLen) (zeros up to the data, then the data)
// into the current block and extends the CRCs: the partial last segment's
// CRC is continued with crcUpdate, so nothing is read back.
func (e *Engine) appendInPlace(cur *version, c *change, crcs []uint32) error {
	f, loc := e.alloc.file(cur.blk.loc), cur.blk.loc
	zeroEnd := c.newLen // extension: all zeros
	if c.n > 0 {
		zeroEnd = c.off
	}
	if err := e.writeZeros(f, loc, c.oldLen, zeroEnd-c.oldLen); err != nil {
		return writeErr(err)
	}
	if c.n > 0 {
		if err := e.writeContent(f, loc, c.data, c.off, c.direct); err != nil {
			return writeErr(err)
		}
	}
	for s := c.oldLen / e.seg; s*e.seg < c.newLen; s++ {
		segLo := s * e.seg
		lo, hi := max(segLo, c.oldLen), min(segLo+e.seg, c.newLen)
		v := uint32(0)
		if lo > segLo {
			v = cur.crcs[s] // continue the old partial segment
		}
		if z := min(hi, zeroEnd); z > lo {
			v = crcZeros(v, z-lo)
		}
		if d := max(lo, zeroEnd); d < hi {
			v = crcUpdate(v, c.data[d-c.off:hi-c.off])
		}
		crcs[s] = v
	}
	if e.opts.Sync {
		if err := e.written(loc, c); err != nil {
			return writeErr(err)
		}
	}
	return nil
}

// cutInPlace shrinks the chunk within its block: nothing is written, only
// the new last segment's CRC is recomputed from the verified old segment.
// The block keeps its high-water mark, so the next append goes COW.
func (e *Engine) cutInPlace(k Key, cur *version, c *change, crcs []uint32) error {
	if c.first < 0 {
		return nil
	}
	s := c.first
	segLo := s * e.seg
	sb := getSeg()
	defer putSeg(sb)
	old := (*sb)[:min(segLo+e.seg, c.oldLen)-segLo]
	if err := e.readContent(e.alloc.file(cur.blk.loc), cur.blk.loc, old, segLo); err != nil {
		if isChecksum(err) {
			e.checksumErrors.Add(1)
		}
		return fmt.Errorf("read old segment %d: %w", s, err)
	}
	if got := crc(old); got != cur.crcs[s] {
		return e.checksumMismatch(k, cur, s, got)
	}
	crcs[s] = crc(old[:c.newLen-segLo])
	return nil
}

func crcZeros(v uint32, n int64) uint32 {
	for n > 0 {
		m := min(n, int64(len(zeros)))
		v = crcUpdate(v, zeros[:m])
		n -= m
	}
	return v
}

// writeErr tags a data write failure so Apply turns the engine read-only.
// ENOSPC keeps its own sentinel; closing is not a disk failure.
func writeErr(err error) error {
	if err == nil || errors.Is(err, ErrNoSpace) || errors.Is(err, ErrClosed) || isChecksum(err) {
		return err
	}
	return fmt.Errorf("%w: %w", errWriteIO, err)
}

// writeSpilled moves inline version cur's content to a fresh block of
// class cls and applies the change there (spill), made durable as
// writeCOW's. It fills crcs for the touched segments.
func (e *Engine) writeSpilled(k Key, cur *version, c *change, cls uint8, crcs []uint32) (blockLoc, error) {
	tmp, err := e.spill(k, cur, cls)
	if err != nil {
		return blockLoc{}, err
	}
	loc := tmp.blk.loc
	f := e.alloc.file(loc)
	fail := func(err error) (blockLoc, error) {
		e.alloc.free(loc)
		return blockLoc{}, err
	}
	// The old content is in the block already: the touched segments are
	// merged with it where they lie.
	if err := e.writeTouched(k, tmp, c, f, loc, f, loc, min(c.oldLen, c.newLen), crcs); err != nil {
		return fail(err)
	}
	if e.opts.Sync {
		if err := e.written(loc, c); err != nil {
			return fail(writeErr(err))
		}
	}
	return loc, nil
}
