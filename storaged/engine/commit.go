package engine

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// recordWrite is what goes with a record into its Pebble batch.
type recordWrite struct {
	inline     []byte // inline content to store (plain; encrypted here)
	dropInline bool   // the chunk's inline content goes
	relaxed    bool   // not synced (Update.Relaxed)
}

// persist writes k's record, and its inline content, in one atomic Pebble
// batch, synced with Sync unless w is relaxed. This is the commit point of
// an update. Every batch waits for its WAL record to be written, so a
// crash of the process keeps it (pebblekv.WALSync).
func (e *Engine) persist(k Key, r *record, w recordWrite) error {
	var kb, ib [keyLen]byte
	b := e.db.NewBatch()
	defer b.Close()
	b.Set(encodeKey(kb[:0], k), r.encode(make([]byte, 0, recordHeader2+4+4*len(r.crcs))), nil)
	switch {
	case w.inline != nil:
		content := w.inline
		if e.ciph != nil {
			content = append([]byte(nil), w.inline...)
			e.ciph.xorAt(content, r.loc.iv, 0)
		}
		b.Set(encodeInlineKey(ib[:0], k), content, nil)
	case w.dropInline:
		b.Delete(encodeInlineKey(ib[:0], k), nil)
	}
	if e.opts.Sync && !w.relaxed {
		defer e.wal.Durable()()
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("write metadata: %w", err)
	}
	return nil
}

// Sync makes every relaxed update, commit and removal before it durable:
// the content of staged updates first, then the metadata log.
func (e *Engine) Sync() error {
	if !e.wal.Pending() && !e.stagedPending() {
		return nil
	}
	if err := e.begin(); err != nil {
		return err
	}
	defer e.end()
	if err := e.syncStaged(); err != nil {
		// Staged content may be lost: as a failed write, no more writes.
		e.setReadOnly("write error: sync staged content: " + err.Error())
		return fmt.Errorf("engine: sync %s: %w: %w", e.dir, ErrIO, err)
	}
	if err := e.wal.Sync(e.db); err != nil {
		return fmt.Errorf("engine: sync %s: %w", e.dir, err)
	}
	return nil
}

// Commit records commitVer as the committed version and chainVer as the
// chain version of k: metadata only, the content is untouched. Relaxed, it
// may return before the write is durable (see Update.Relaxed).
func (e *Engine) Commit(k Key, commitVer, chainVer uint32, relaxed bool) (Meta, error) {
	if err := e.begin(); err != nil {
		return Meta{}, err
	}
	defer e.end()
	mu := e.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	cur := e.current(k)
	if cur == nil {
		if err := e.badErr(k); err != nil {
			return Meta{}, fmt.Errorf("engine: commit %v: %w", k, err)
		}
		return Meta{}, fmt.Errorf("engine: commit %v: %w", k, ErrNotFound)
	}
	if commitVer > cur.meta.UpdateVer {
		return Meta{}, fmt.Errorf("engine: commit %v: %w: commit version %d > update version %d", k, ErrInvalid, commitVer, cur.meta.UpdateVer)
	}
	rec := record{meta: cur.meta, crcs: cur.crcs, loc: cur.loc()}
	rec.meta.CommitVer, rec.meta.ChainVer = commitVer, chainVer
	if err := e.persist(k, &rec, recordWrite{relaxed: relaxed}); err != nil {
		return Meta{}, fmt.Errorf("engine: commit %v: %w", k, err)
	}
	e.install(k, &version{meta: rec.meta, crcs: cur.crcs, blk: cur.blk, inline: cur.inline, iv: cur.iv})
	return rec.meta, nil
}

// Remove deletes k. Removing a missing chunk is not an error. Handles on k
// stay readable until released.
func (e *Engine) Remove(k Key) error {
	if err := e.begin(); err != nil {
		return err
	}
	defer e.end()
	mu := e.keyLock(k)
	mu.Lock()
	defer mu.Unlock()
	cur := e.current(k)
	if cur == nil && e.badErr(k) == nil {
		return nil
	}
	var kb, ib [keyLen]byte
	b := e.db.NewBatch()
	defer b.Close()
	b.Delete(encodeKey(kb[:0], k), nil)
	if cur == nil || cur.inline { // a corrupt record may have left content
		b.Delete(encodeInlineKey(ib[:0], k), nil)
	}
	if e.opts.Sync {
		defer e.wal.Durable()()
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("engine: remove %v: %w", k, err)
	}
	if cur == nil {
		e.clearBad(k)
		return nil
	}
	e.install(k, nil)
	if cur.blk != nil {
		e.unref(cur.blk)
	}
	e.chunks.Add(-1)
	if cur.inline {
		e.inlineChunks.Add(-1)
	}
	e.usedBytes.Add(-int64(cur.meta.Len))
	e.full.freed() // its block may be what the next write needs
	return nil
}
