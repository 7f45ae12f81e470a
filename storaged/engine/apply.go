package engine

import (
	"errors"
	"fmt"
	"time"
)

// Update describes a change of a chunk's content plus the versions to
// record with it. Exactly one of: a write (default), Replace, Truncate.
type Update struct {
	Offset    uint32
	Data      []byte
	Replace   bool   // full-chunk replace: content becomes Data exactly (Offset must be 0)
	Truncate  bool   // set the length to Length (cut, or extend with zeros); Data unused
	Length    uint32 // new length for Truncate
	ChunkSize uint32 // must match the chunk's ChunkSize if it exists (else ErrChunkSizeMismatch); a new chunk takes it
	// The versions to record with the new content (CommitVer <= UpdateVer).
	ChainVer, UpdateVer, CommitVer uint32
	// Relaxed: the update may return before its metadata write is durable
	// (a block's content is still synced first); Engine.Sync makes it so.
	Relaxed bool
	// Direct: the written content's whole aligned runs go to the disk past
	// the page cache (direct.go).
	Direct bool
	// Staged (with Relaxed): nothing refers to the chunk until the writer's
	// Sync returns (an S3 body's staging file), so its content need not be
	// durable before its record: Sync makes it so, with the record. A
	// machine crash before that may leave the chunk failing its checksum
	// instead of holding its old or new content.
	Staged bool
}

func validateUpdate(u *Update) error {
	switch {
	case u.ChunkSize == 0 || u.ChunkSize > MaxChunkSize:
		return fmt.Errorf("%w: chunk size %d not in 1..%d", ErrInvalid, u.ChunkSize, MaxChunkSize)
	case u.CommitVer > u.UpdateVer:
		return fmt.Errorf("%w: commit version %d > update version %d", ErrInvalid, u.CommitVer, u.UpdateVer)
	case u.Replace && u.Truncate:
		return fmt.Errorf("%w: replace and truncate together", ErrInvalid)
	case u.Replace && u.Offset != 0:
		return fmt.Errorf("%w: replace at offset %d", ErrInvalid, u.Offset)
	case u.Truncate && u.Length > u.ChunkSize:
		return fmt.Errorf("%w: truncate to %d beyond chunk size %d", ErrOutOfRange, u.Length, u.ChunkSize)
	case !u.Truncate && uint64(u.Offset)+uint64(len(u.Data)) > uint64(u.ChunkSize):
		return fmt.Errorf("%w: write [%d, +%d) beyond chunk size %d", ErrOutOfRange, u.Offset, len(u.Data), u.ChunkSize)
	}
	return nil
}

// change is an update resolved against the chunk's current length.
// New content at position x < newLen is: data[x-off] if off <= x < off+n,
// else old content if x < oldLen, else zero.
type change struct {
	oldLen int64 // old content that may survive (0 for Replace)
	off, n int64 // written range
	data   []byte
	newLen int64
	// Segments [first, last] get new CRCs; first < 0: none. Outside them the
	// new content equals the old one, segment for segment.
	first, last int64
	direct      bool // Update.Direct
	staged      bool // Update.Staged
}

type applyMode int

const (
	modeMeta   applyMode = iota // content unchanged: new record, same block
	modeEmpty                   // new length 0: record without a block
	modeCut                     // shrink within the block: new record, same block
	modeAppend                  // write past the end within the block, in place
	modeCOW                     // new content in a new block
	modeInline                  // new content inline (inline.go)
	modeSpill                   // inline content outgrown: into a new block
)

// Apply changes k's content and records the update's versions, atomically:
// after a crash k shows either the old content and metadata or the new.
//
// Copy-on-write: the new content is assembled in a fresh block (untouched
// parts copied in the kernel, edge segments read, verified and merged), made
// durable, then one Pebble write points the record at it; the old block is
// freed once no Handle uses it. Appends (and extensions) that fit the
// current block and start at its end are written in place instead: those
// bytes are beyond every reader's length, and only the record switch makes
// them visible.
func (e *Engine) Apply(k Key, u Update) (Meta, error) {
	if err := validateUpdate(&u); err != nil {
		return Meta{}, fmt.Errorf("engine: apply %v: %w", k, err)
	}
	if err := e.begin(); err != nil {
		return Meta{}, err
	}
	defer e.end()
	if e.ro.Load() {
		return Meta{}, fmt.Errorf("engine: apply %v: %w (%s)", k, ErrReadOnly, e.readOnlyReason())
	}
	if err := e.full.refuse(time.Now()); err != nil {
		return Meta{}, fmt.Errorf("engine: apply %v: %w", k, err)
	}
	mu := e.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	cur := e.current(k)
	if cur == nil && !u.Replace {
		if err := e.badErr(k); err != nil {
			return Meta{}, fmt.Errorf("engine: apply %v: %w", k, err)
		}
	}
	if cur != nil && cur.meta.ChunkSize != u.ChunkSize {
		return Meta{}, fmt.Errorf("engine: apply %v: %w: chunk has %d, update %d", k, ErrChunkSizeMismatch, cur.meta.ChunkSize, u.ChunkSize)
	}
	m, err := e.apply(k, cur, &u)
	if err != nil {
		switch {
		case errors.Is(err, ErrNoSpace):
			if e.full.set(time.Now(), err.Error()) {
				e.log.Warn("engine: disk full: writes refused until space returns; reads, commits and removals go on", "reason", err.Error())
			}
		case errors.Is(err, errWriteIO):
			e.setReadOnly("write error: " + err.Error())
		}
		return Meta{}, fmt.Errorf("engine: apply %v: %w", k, err)
	}
	if e.full.clear() {
		e.log.Info("engine: space again: writes resume")
	}
	return m, nil
}

func (e *Engine) apply(k Key, cur *version, u *Update) (Meta, error) {
	var oldLen int64
	if cur != nil {
		oldLen = int64(cur.meta.Len)
	}
	c := change{oldLen: oldLen, off: int64(u.Offset), n: int64(len(u.Data)), data: u.Data, first: -1, last: -1, direct: u.Direct, staged: u.Staged && u.Relaxed}
	var dlo, dhi int64 // range whose bytes may differ from the old content
	switch {
	case u.Replace:
		c.oldLen, c.newLen = 0, c.n
		dlo, dhi = 0, c.n
	case u.Truncate:
		c.n, c.data, c.newLen = 0, nil, int64(u.Length)
		dlo, dhi = oldLen, c.newLen // empty unless extending
	case c.n > 0:
		c.newLen = max(oldLen, c.off+c.n)
		dlo, dhi = min(c.off, oldLen), c.off+c.n
	default: // empty write: content unchanged
		c.newLen = oldLen
	}
	if dhi > dlo {
		c.first, c.last = dlo/e.seg, (dhi-1)/e.seg
	} else if c.newLen < oldLen && c.newLen%e.seg != 0 {
		c.first = c.newLen / e.seg // the new last segment got shorter
		c.last = c.first
	}

	newClass := classFor(uint32(c.newLen))
	var curBlk *block
	curInline := cur != nil && cur.inline
	if cur != nil {
		curBlk = cur.blk
	}
	sameBlock := !u.Replace && curBlk != nil && curBlk.loc.class == newClass
	var mode applyMode
	switch {
	case c.newLen == 0:
		mode = modeEmpty
	case c.first < 0 && c.newLen == oldLen && (curBlk != nil || curInline):
		mode = modeMeta
	case sameBlock && c.newLen < oldLen:
		mode = modeCut
	case sameBlock && dlo >= oldLen && curBlk.written == uint32(oldLen):
		mode = modeAppend
	case e.inlineFits(c.newLen) && (curBlk == nil || u.Replace):
		mode = modeInline
	case curInline && !u.Replace:
		mode = modeSpill
	default:
		mode = modeCOW
	}

	crcs := make([]uint32, segCount(uint32(c.newLen), e.seg))
	if cur != nil && !u.Replace {
		copy(crcs, cur.crcs)
	}
	rec := record{loc: blockLoc{class: noClass}}
	var inline []byte // modeInline's content
	var err error
	switch mode {
	case modeMeta:
		crcs = cur.crcs
		rec.loc = cur.loc()
	case modeEmpty:
		crcs = nil
	case modeCut:
		rec.loc = curBlk.loc
		err = e.cutInPlace(k, cur, &c, crcs)
	case modeAppend:
		rec.loc = curBlk.loc
		err = e.appendInPlace(cur, &c, crcs)
	case modeCOW:
		rec.loc, err = e.writeCOW(k, cur, &c, newClass, crcs)
	case modeInline:
		rec.loc = blockLoc{class: inlineClass}
		if e.ciph != nil {
			rec.loc.iv, err = newIV()
		}
		if err == nil {
			inline, err = e.newInlineContent(k, cur, &c)
			crcs = e.segmentCRCs(inline)
		}
	case modeSpill:
		rec.loc, err = e.writeSpilled(k, cur, &c, newClass, crcs)
	}
	if err != nil {
		return Meta{}, err
	}
	rec.crcs = crcs
	rec.meta = Meta{
		ChainVer: u.ChainVer, CommitVer: u.CommitVer, UpdateVer: u.UpdateVer,
		Len: uint32(c.newLen), ChunkSize: u.ChunkSize, Checksum: chunkChecksum(uint32(c.newLen), crcs, e.seg),
	}
	w := recordWrite{inline: inline, dropInline: curInline && mode != modeInline && mode != modeMeta, relaxed: u.Relaxed}
	if err := e.persist(k, &rec, w); err != nil {
		if mode == modeCOW || mode == modeSpill {
			e.alloc.free(rec.loc)
		}
		return Meta{}, err
	}

	nv := &version{meta: rec.meta, crcs: crcs}
	switch mode {
	case modeCOW, modeSpill:
		nv.blk = &block{loc: rec.loc, written: uint32(c.newLen)}
		nv.blk.refs.Store(1)
	case modeAppend:
		nv.blk = curBlk
		curBlk.written = uint32(c.newLen)
	case modeMeta, modeCut:
		nv.blk = curBlk
		nv.inline, nv.iv = cur.inline, cur.iv
	case modeInline:
		nv.inline, nv.iv = true, rec.loc.iv
	}
	e.install(k, nv)
	if curBlk != nil && nv.blk != curBlk {
		e.unref(curBlk)
	}
	if cur == nil {
		e.chunks.Add(1)
		e.clearBad(k)
	}
	switch {
	case nv.inline && !curInline:
		e.inlineChunks.Add(1)
	case curInline && !nv.inline:
		e.inlineChunks.Add(-1)
	}
	e.usedBytes.Add(c.newLen - oldLen)
	return rec.meta, nil
}
