package fusefs

import (
	"context"
	"syscall"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// File locks: the kernel forwards fcntl and flock locks (EnableLocks) and
// they are the cluster's (client.Meta.SetLock), held by this mount's lock
// session: a lock taken here holds against every other mount, and goes
// when this mount does.

func lockClass(flags uint32) uint8 {
	if flags&fuse.FUSE_LK_FLOCK != 0 {
		return metaapi.LockFlock
	}
	return metaapi.LockPOSIX
}

func kindOf(typ uint32) uint8 {
	if typ == syscall.F_WRLCK {
		return metaapi.LockWrite
	}
	return metaapi.LockRead
}

func fileLock(in *fuse.LkIn) metaapi.FileLock {
	return metaapi.FileLock{Owner: in.Owner, Kind: kindOf(in.Lk.Typ), Start: in.Lk.Start, End: in.Lk.End, Pid: in.Lk.Pid}
}

func (f *fileSystem) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	if isVirt(in.NodeId) {
		return fuse.ENOSYS
	}
	ctx, done := f.ctx(cancel)
	defer done()
	l, found, err := f.meta.GetLock(ctx, in.NodeId, lockClass(in.LkFlags), fileLock(in))
	if err != nil {
		return f.status(ctx, "getlk", err)
	}
	if !found {
		out.Lk = fuse.FileLock{Start: in.Lk.Start, End: in.Lk.End, Typ: syscall.F_UNLCK}
		return fuse.OK
	}
	typ := uint32(syscall.F_RDLCK)
	if l.Kind == metaapi.LockWrite {
		typ = syscall.F_WRLCK
	}
	out.Lk = fuse.FileLock{Start: l.Start, End: l.End, Typ: typ, Pid: l.Pid}
	return fuse.OK
}

func (f *fileSystem) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	if isVirt(in.NodeId) {
		return fuse.ENOSYS
	}
	ctx, done := f.ctx(cancel)
	defer done()
	unlock := in.Lk.Typ == syscall.F_UNLCK
	if unlock {
		if err := f.beforeUnlock(ctx, in.NodeId); err != nil {
			return f.status(ctx, "setlk", err)
		}
		return f.status(ctx, "setlk", f.meta.SetLock(ctx, in.NodeId, lockClass(in.LkFlags), fileLock(in), true))
	}
	f.noteLocked(in)
	if err := f.meta.SetLock(ctx, in.NodeId, lockClass(in.LkFlags), fileLock(in), false); err != nil {
		return f.status(ctx, "setlk", err)
	}
	f.afterLock(ctx, in.NodeId)
	return fuse.OK
}

// Locks order the holders' use of a file, so a lock is where this mount
// meets the others' writes (as NFS's locks do): what it caches of the
// file may predate the last holder's writes, and goes when a lock is
// taken (afterLock); what it wrote reaches the cluster before it lets go
// (beforeUnlock). Between locks, the mount's caches hold as they always do.

// afterLock drops what this mount caches of the file: its pages, its
// attributes, the length it knows.
func (f *fileSystem) afterLock(ctx context.Context, ino uint64) {
	if in, err := f.meta.Stat(ctx, ino); err == nil {
		f.noteInode(in)
	}
	f.mu.Lock()
	delete(f.seenGen, ino)
	delete(f.known, ino)
	f.mu.Unlock()
	f.ra.fence()
	if f.srv != nil {
		f.srv.InodeNotify(ino, 0, 0)
	}
}

// beforeUnlock makes what this mount wrote to the file the cluster's: the
// queued writes written, every write session synced.
func (f *fileSystem) beforeUnlock(ctx context.Context, ino uint64) error {
	oi := f.openOf(ino)
	if oi == nil {
		return nil
	}
	if err := oi.q.drain(); err != nil {
		return err
	}
	f.mu.Lock()
	var writers []*handle
	for h := range oi.handles {
		if h.write {
			writers = append(writers, h)
		}
	}
	f.mu.Unlock()
	for _, h := range writers {
		if err := h.syncWrites(ctx); err != nil {
			return err
		}
	}
	return nil
}

// syncWrites makes the handle's writes the cluster's, as fsync(2) does.
func (h *handle) syncWrites(ctx context.Context) error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if !h.live.Load() {
		return nil
	}
	return h.f.Load().Sync(ctx)
}

// noteLocked remembers the files this mount took fcntl locks on: their
// closes release the closing process's locks (releasePOSIXLocks).
func (f *fileSystem) noteLocked(in *fuse.LkIn) {
	if lockClass(in.LkFlags) != metaapi.LockPOSIX {
		return
	}
	f.mu.Lock()
	if f.locked == nil {
		f.locked = map[uint64]bool{}
	}
	f.locked[in.NodeId] = true
	f.mu.Unlock()
}

// releasePOSIXLocks drops the fcntl locks of the closing process (the
// flush's lock owner) on the file, as close(2) does: the kernel leaves it
// to the file system when the file system keeps the locks.
func (f *fileSystem) releasePOSIXLocks(cancel <-chan struct{}, in *fuse.FlushIn) {
	f.mu.Lock()
	locked := f.locked[in.NodeId]
	f.mu.Unlock()
	if !locked {
		return
	}
	ctx, done := f.ctx(cancel)
	defer done()
	if err := f.beforeUnlock(ctx, in.NodeId); err != nil {
		f.opts.Log.Warn("fusefs: writing out a locked file at close failed", "ino", in.NodeId, "err", err)
	}
	l := metaapi.FileLock{Owner: in.LockOwner, Kind: metaapi.LockRead, Start: 0, End: 1<<64 - 1}
	if err := f.meta.SetLock(ctx, in.NodeId, metaapi.LockPOSIX, l, true); err != nil {
		f.opts.Log.Warn("fusefs: releasing fcntl locks at close failed; they go with the mount's lock session", "ino", in.NodeId, "err", err)
	}
}

// SetLkw waits for the lock as long as it takes, until the caller is
// interrupted (EINTR) or the mount goes.
func (f *fileSystem) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	if isVirt(in.NodeId) {
		return fuse.ENOSYS
	}
	if in.Lk.Typ == syscall.F_UNLCK {
		return f.SetLk(cancel, in)
	}
	f.noteLocked(in)
	ctx, stop := context.WithCancel(f.base)
	defer stop()
	go func() {
		select {
		case <-cancel:
			stop()
		case <-ctx.Done():
		}
	}()
	err := f.meta.SetLockWait(ctx, in.NodeId, lockClass(in.LkFlags), fileLock(in))
	if metaapi.Errno(err) == syscall.EINTR {
		return fuse.EINTR
	}
	if err != nil {
		return f.status(ctx, "setlkw", err)
	}
	actx, done := f.ctx(cancel)
	defer done()
	f.afterLock(actx, in.NodeId)
	return fuse.OK
}

// releaseFlock drops the flock of an open file at its last close.
func (f *fileSystem) releaseFlock(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	if in.ReleaseFlags&fuse.FUSE_RELEASE_FLOCK_UNLOCK == 0 || isVirt(in.NodeId) {
		return
	}
	ctx, done := f.ctx(cancel)
	defer done()
	l := metaapi.FileLock{Owner: in.LockOwner, Kind: metaapi.LockRead, Start: 0, End: 1<<64 - 1}
	if err := f.meta.SetLock(ctx, in.NodeId, metaapi.LockFlock, l, true); err != nil {
		f.opts.Log.Warn("fusefs: releasing a flock at close failed; it goes with the mount's lock session", "ino", in.NodeId, "err", err)
	}
}
