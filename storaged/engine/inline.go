package engine

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Inline chunks. A chunk of at most Options.InlineMax bytes keeps its
// content in the metadata store, under 'i' and the chunk's key, instead
// of in a block: writing it is one Pebble batch (record and content
// together), with no data file write and no fdatasync, and a relaxed write
// is no fsync at all. The smallest block is 64 KiB, so a small file's
// chunk also takes a few KiB instead of 64.
//
// A chunk becomes inline when it is created that small or replaced whole
// by that little; it stays inline while it fits. An update that outgrows
// InlineMax spills it: the content moves to a fresh block, made durable
// before the record that points at it, as any copy-on-write. A chunk with
// a block keeps it until it is replaced whole or emptied.
//
// The content is ciphertext on an encrypted disk, under an IV drawn for
// each write and kept in the record (format 2), so no keystream position
// is used twice. Reads verify it against the record's segment CRCs, as
// they verify a block.

const prefixInline = 'i'

// encodeInlineKey appends the Pebble key of k's inline content to dst.
func encodeInlineKey(dst []byte, k Key) []byte {
	dst = encodeKey(dst, k)
	dst[len(dst)-keyLen] = prefixInline
	return dst
}

// inlineFits reports whether content of n bytes may be inline.
func (e *Engine) inlineFits(n int64) bool { return n > 0 && n <= int64(e.opts.InlineMax) }

// loadInline reads v's inline content, decrypted, and checks it against
// v's segment CRCs. A mismatch is ErrChecksum: corruption, or (for a
// reader without the key lock) a newer version's content.
func (e *Engine) loadInline(k Key, v *version) ([]byte, error) {
	var kb [keyLen]byte
	val, closer, err := e.db.Get(encodeInlineKey(kb[:0], k))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("engine: inline content of %v missing: %w", k, ErrChecksum)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read inline content of %v: %w", k, err)
	}
	content := append([]byte(nil), val...)
	closer.Close()
	if len(content) != int(v.meta.Len) {
		return nil, fmt.Errorf("engine: inline content of %v holds %d bytes, its record %d: %w", k, len(content), v.meta.Len, ErrChecksum)
	}
	if e.ciph != nil {
		e.ciph.xorAt(content, v.iv, 0)
	}
	for s := range v.crcs {
		lo := int64(s) * e.seg
		if got := crc(content[lo:min(lo+e.seg, int64(len(content)))]); got != v.crcs[s] {
			return nil, fmt.Errorf("engine: inline content of %v segment %d: %w", k, s, ErrChecksum)
		}
	}
	return content, nil
}

// inlineHandleContent loads the content of a Handle on inline version v
// without the key lock. A writer persists before it installs, so the store
// may hold a newer version's content than v: a mismatch is retried under
// the key lock, where the two agree, and is corruption only there.
func (e *Engine) inlineHandleContent(k Key, v *version) (*version, []byte, error) {
	if content, err := e.loadInline(k, v); err == nil {
		return v, content, nil
	}
	mu := e.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	cur := e.current(k)
	if cur == nil {
		return nil, nil, fmt.Errorf("engine: get %v: %w", k, ErrNotFound)
	}
	if !cur.inline {
		if cur.blk != nil {
			cur.blk.refs.Add(1) // under the key lock cur stays current
		}
		return cur, nil, nil
	}
	content, err := e.loadInline(k, cur)
	if err != nil {
		e.checksumErrors.Add(1)
		e.log.Error("engine: inline content corrupt", "chunk", k.String(), "err", err)
		return nil, nil, err
	}
	return cur, content, nil
}

// newInlineContent builds the new content of an update of cur (inline, or
// none) in memory: the old bytes that survive, zeros, the data.
func (e *Engine) newInlineContent(k Key, cur *version, c *change) ([]byte, error) {
	content := make([]byte, c.newLen)
	if keep := min(c.oldLen, c.newLen); keep > 0 && cur != nil && cur.inline {
		old, err := e.loadInline(k, cur)
		if err != nil {
			if isChecksum(err) {
				e.checksumErrors.Add(1)
			}
			return nil, err
		}
		copy(content, old[:keep])
	}
	if c.n > 0 {
		copy(content[c.off:], c.data)
	}
	return content, nil
}

// segmentCRCs returns the CRC of every segment of content.
func (e *Engine) segmentCRCs(content []byte) []uint32 {
	crcs := make([]uint32, segCount(uint32(len(content)), e.seg))
	for s := range crcs {
		lo := int64(s) * e.seg
		crcs[s] = crc(content[lo:min(lo+e.seg, int64(len(content)))])
	}
	return crcs
}

// spill moves inline version cur's content to a fresh block of class cls,
// to be updated there in place: the block holds no record yet, so nothing
// reads it until the record that points at it is persisted.
func (e *Engine) spill(k Key, cur *version, cls uint8) (*version, error) {
	old, err := e.loadInline(k, cur)
	if err != nil {
		if isChecksum(err) {
			e.checksumErrors.Add(1)
		}
		return nil, err
	}
	loc, err := e.freshBlock(cls, false)
	if err != nil {
		return nil, err
	}
	if err := e.writeContent(e.alloc.file(loc), loc, old, 0, false); err != nil {
		e.alloc.free(loc)
		return nil, writeErr(err)
	}
	return &version{meta: cur.meta, crcs: cur.crcs, blk: &block{loc: loc, written: cur.meta.Len}}, nil
}
