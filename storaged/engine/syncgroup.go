package engine

import "sync"

// syncGroup coalesces the fdatasyncs of one data file. Writes to the file
// are counted once done (wrote); a sync covers every write counted before
// it began, so writers that arrive while a sync runs share the next one
// instead of each running their own. Eight writers of 1 MiB blocks into
// one file, each with its own fdatasync, reach 388 MiB/s on this machine's
// disk against 1,004 without; ext4 serialises the syncs of one inode and
// each pays a cache flush of the device.
//
// A write that must be durable before its record is committed counts
// itself and syncs at once (writeDurable); a deferred one (Update.Staged)
// only counts itself, and Engine.Sync syncs every file with writes
// counted since its last sync (pending).
//
// Invariants:
//   - sync returns nil only after a sync that began after every write
//     counted before the call has completed without error.
//   - Once a sync fails, every caller with a write it did not cover gets
//     its error: fdatasync reports a lost write once, and a sync after it
//     may succeed over data that never reached the disk.
type syncGroup struct {
	mu      sync.Mutex
	cond    sync.Cond
	written uint64 // writes counted
	synced  uint64 // writes covered by completed syncs (they complete in order: one runs at a time)
	running bool
	err     error // the first failed sync's error: synced stops there
}

// wrote counts a write done to the file.
func (g *syncGroup) wrote() {
	g.mu.Lock()
	g.written++
	g.mu.Unlock()
}

// writeDurable counts a write done to the file and returns once a sync
// covers it.
func (g *syncGroup) writeDurable(run func() error) error {
	g.wrote()
	return g.sync(run)
}

// pending reports whether a write counted so far is not yet covered.
func (g *syncGroup) pending() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.synced < g.written
}

// sync returns when every write counted before the call is covered by a
// completed sync; run is the sync itself, called by one caller at a time.
func (g *syncGroup) sync(run func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cond.L == nil {
		g.cond.L = &g.mu
	}
	want := g.written
	for g.synced < want {
		if g.err != nil {
			return g.err
		}
		if g.running {
			g.cond.Wait()
			continue
		}
		g.running = true
		upTo := g.written // the writes done before this sync begins
		g.mu.Unlock()
		err := run()
		g.mu.Lock()
		g.running = false
		if err != nil {
			g.err = err
		} else {
			g.synced = upTo
		}
		g.cond.Broadcast()
	}
	return nil
}
