package pebblekv

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// WALSync lets a Pebble store acknowledge some writes before they are
// durable: every write asks Pebble for a synced write (pebble.Sync), so
// each waits until Pebble has written its WAL record to the file, where a
// crash of the process cannot lose it; but the WAL file's syncs reach the
// disk only while a durable write or a Sync waits (Durable). A relaxed
// write then costs a write, not an fsync. The WAL is one log in write
// order, so a sync covers every write before it, and a machine crash
// leaves a prefix of the writes.
//
// The store must be opened on FS(...). Should Pebble ever create its WAL
// under another category, no file is wrapped and every write is durable:
// slower, never wrong (TestRelaxedCommitsSkipTheFsync notices).
type WALSync struct {
	durable atomic.Int64  // durable writes and Syncs waiting
	skipped atomic.Uint64 // WAL syncs skipped so far
	coverMu sync.Mutex
	covered uint64 // skips a completed real sync covers
}

// walCategory is the category Pebble creates its WAL files under.
const walCategory vfs.DiskWriteCategory = "pebble-wal"

// FS wraps the file system a store is opened on.
func (w *WALSync) FS(fs vfs.FS) vfs.FS {
	if fs == nil {
		fs = vfs.Default
	}
	return walSyncFS{FS: fs, w: w}
}

// Durable marks a durable write in progress until the returned function is
// called: every WAL sync meanwhile reaches the disk. Call it before handing
// the write to Pebble and end it after the write returns.
func (w *WALSync) Durable() (done func()) {
	w.durable.Add(1)
	return func() { w.durable.Add(-1) }
}

// Sync makes every write acknowledged before it durable: one WAL fsync
// (an empty synced record), unless no sync was skipped since the last real
// one began. A write whose sync was skipped had its record written before
// the skip was counted, so a real sync that starts after the count covers
// it.
func (w *WALSync) Sync(db *pebble.DB) error {
	want := w.skipped.Load()
	w.coverMu.Lock()
	done := w.covered >= want
	w.coverMu.Unlock()
	if done {
		return nil
	}
	end := w.Durable()
	upTo := w.skipped.Load()
	err := db.LogData(nil, pebble.Sync)
	end()
	if err != nil {
		return err
	}
	w.coverMu.Lock()
	w.covered = max(w.covered, upTo)
	w.coverMu.Unlock()
	return nil
}

// SyncEvery calls sync every window until stop is closed: the bound on how
// long a relaxed write stays not durable.
func SyncEvery(window time.Duration, stop <-chan struct{}, sync func()) {
	t := time.NewTicker(window)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			sync()
		}
	}
}

// Queued counts a write acknowledged with its WAL record only queued
// (pebble.NoSync): it waits for a sync like one whose sync was skipped. Its
// record was queued before the count, so a real sync that starts after it
// covers it.
func (w *WALSync) Queued() { w.skipped.Add(1) }

// Pending reports whether a write may be waiting for a sync.
func (w *WALSync) Pending() bool {
	want := w.skipped.Load()
	w.coverMu.Lock()
	defer w.coverMu.Unlock()
	return w.covered < want
}

// walSyncFS passes everything through, wrapping the WAL files.
type walSyncFS struct {
	vfs.FS
	w *WALSync
}

func (p walSyncFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, category)
	return p.wrap(f, err, category)
}

func (p walSyncFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.ReuseForWrite(oldname, newname, category)
	return p.wrap(f, err, category)
}

func (p walSyncFS) wrap(f vfs.File, err error, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err != nil || category != walCategory {
		return f, err
	}
	return &walFile{File: f, w: p.w}, nil
}

// walFile is a WAL file whose syncs are skipped while no durable write or
// Sync waits. Its close always syncs: a later WAL's durable record must not
// survive a crash that loses this one's tail.
type walFile struct {
	vfs.File
	w *WALSync
}

func (f *walFile) durable() bool {
	if f.w.durable.Load() > 0 {
		return true
	}
	f.w.skipped.Add(1)
	return false
}

func (f *walFile) Sync() error {
	if !f.durable() {
		return nil
	}
	return f.File.Sync()
}

func (f *walFile) SyncData() error {
	if !f.durable() {
		return nil
	}
	return f.File.SyncData()
}

func (f *walFile) SyncTo(length int64) (fullSync bool, err error) {
	if !f.durable() {
		return false, nil
	}
	return f.File.SyncTo(length)
}

func (f *walFile) Close() error {
	serr := f.File.SyncData()
	if err := f.File.Close(); err != nil {
		return err
	}
	return serr
}
