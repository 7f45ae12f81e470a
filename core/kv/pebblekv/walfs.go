package pebblekv

import "github.com/cockroachdb/pebble/v2/vfs"

// walCategory is the category Pebble creates its WAL files under.
const walCategory vfs.DiskWriteCategory = "pebble-wal"

// walSyncPolicy is the file system under the store: everything passes
// through, except that a WAL file's syncs reach the disk only while the
// engine wants durability (a durable commit or a Sync waits). Every commit
// asks Pebble for a synced write, so each waits until its record is written
// to the file; a relaxed one then costs a write, not an fsync.
//
// Should Pebble ever create its WAL under another category, no file is
// wrapped and every commit is durable: slower, never wrong
// (TestRelaxedCommitsSkipTheFsync notices).
type walSyncPolicy struct {
	vfs.FS
	e *engine
}

func (p walSyncPolicy) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, category)
	return p.wrap(f, err, category)
}

func (p walSyncPolicy) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.ReuseForWrite(oldname, newname, category)
	return p.wrap(f, err, category)
}

func (p walSyncPolicy) wrap(f vfs.File, err error, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err != nil || category != walCategory {
		return f, err
	}
	return &walFile{File: f, e: p.e}, nil
}

// walFile is a WAL file whose syncs are skipped while no durable commit or
// Sync waits. Its close always syncs: a later WAL's durable record must not
// survive a crash that loses this one's tail.
type walFile struct {
	vfs.File
	e *engine
}

func (f *walFile) durable() bool {
	if f.e.durable.Load() > 0 {
		return true
	}
	f.e.skipped.Add(1)
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
