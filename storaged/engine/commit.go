package engine

import "fmt"

// persist writes k's record: one atomic (and, with Sync, synced) Pebble
// write. This is the commit point of an update.
func (e *Engine) persist(k Key, r *record) error {
	var kb [keyLen]byte
	val := r.encode(make([]byte, 0, recordHeader+4+4*len(r.crcs)))
	if err := e.db.Set(encodeKey(kb[:0], k), val, e.wopts); err != nil {
		return fmt.Errorf("write metadata: %w", err)
	}
	return nil
}

// Commit records commitVer as the committed version and chainVer as the
// chain version of k: metadata only, the content is untouched.
func (e *Engine) Commit(k Key, commitVer, chainVer uint32) (Meta, error) {
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
	rec := record{meta: cur.meta, crcs: cur.crcs, loc: blockLoc{class: noClass}}
	rec.meta.CommitVer, rec.meta.ChainVer = commitVer, chainVer
	if cur.blk != nil {
		rec.loc = cur.blk.loc
	}
	if err := e.persist(k, &rec); err != nil {
		return Meta{}, fmt.Errorf("engine: commit %v: %w", k, err)
	}
	e.install(k, &version{meta: rec.meta, crcs: cur.crcs, blk: cur.blk})
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
	var kb [keyLen]byte
	if err := e.db.Delete(encodeKey(kb[:0], k), e.wopts); err != nil {
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
	e.usedBytes.Add(-int64(cur.meta.Len))
	e.full.freed() // its block may be what the next write needs
	return nil
}
