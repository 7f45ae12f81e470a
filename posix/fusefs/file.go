package fusefs

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
)

// handle is an open file. A write handle owns a write session; closing the
// file (FLUSH) ends the session once something was written, so another
// client sees the data and length as soon as close(2) returns. A write that
// comes after that (a dup'd descriptor, mmap write-back) opens a new one.
type handle struct {
	id    uint64
	ino   uint64
	oi    *openInode
	write bool
	sync  bool // O_SYNC, O_DSYNC or O_DIRECT: no write-behind
	creds client.Creds

	mu    sync.RWMutex // read-locked around writes, locked to end or reopen the session
	f     atomic.Pointer[client.File]
	live  atomic.Bool // the write session is open (changes under mu)
	dirty atomic.Bool
	from  genSeen // the inode when the session began (under mu)
	// shared: a whole-file copy_file_range taken by sharing chunks, while
	// nothing wrote since (copyrange.go).
	shared atomic.Pointer[sharedCopy]
}

// openInode is this mount's state of an open inode: its handles, the
// latest inode metad returned, and a read-only view for reads. Reads of
// every handle go through that view, whose length is the largest this mount
// knows (metad's, or what a live writer here wrote past it), because a
// client.File never reads past the length it was given and the kernel asks
// for whatever its own idea of the size covers.
type openInode struct {
	handles map[*handle]struct{}
	inode   metaapi.Inode
	reader  *client.File
	q       queue // write-behind
}

// openFlags is what metad needs of open(2)'s flags.
func openFlags(flags uint32) int {
	return int(flags) & (os.O_WRONLY | os.O_RDWR | os.O_TRUNC | os.O_EXCL)
}

func isWrite(flags uint32) bool { return int(flags)&syscall.O_ACCMODE != syscall.O_RDONLY }

func (f *fileSystem) addHandle(in metaapi.Inode, file *client.File, write bool, flags uint32, c client.Creds) *handle {
	h := &handle{ino: in.ID, write: write, creds: c, sync: flags&(syscall.O_SYNC|syscall.O_DSYNC|syscall.O_DIRECT) != 0,
		from: genSeen{in.Gen, in.Length}}
	h.live.Store(write)
	h.f.Store(file)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextFH++
	h.id = f.nextFH
	f.files[h.id] = h
	oi := f.opened[in.ID]
	if oi == nil {
		oi = &openInode{handles: map[*handle]struct{}{}}
		oi.q.init()
		f.opened[in.ID] = oi
	}
	h.oi = oi
	oi.handles[h] = struct{}{}
	f.noteInodeLocked(oi, in)
	return h
}

// noteInode records a fresh inode from metad for an open file.
func (f *fileSystem) noteInode(in metaapi.Inode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if oi := f.opened[in.ID]; oi != nil {
		f.noteInodeLocked(oi, in)
	}
}

func (f *fileSystem) noteInodeLocked(oi *openInode, in metaapi.Inode) {
	oi.inode = in
	oi.reader = nil // rebuilt at the next read
}

// sizeLocked is the largest length this mount knows for an open inode.
func sizeLocked(oi *openInode) uint64 {
	size := max(oi.inode.Length, oi.q.queuedEnd())
	for h := range oi.handles {
		if h.write && h.live.Load() {
			size = max(size, h.f.Load().Size())
		}
	}
	return size
}

func (f *fileSystem) handle(fh uint64) *handle {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.files[fh]
}

func (f *fileSystem) dropHandle(h *handle) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.files, h.id)
	if oi := f.opened[h.ino]; oi != nil {
		delete(oi.handles, h)
		if len(oi.handles) == 0 {
			delete(f.opened, h.ino)
			delete(f.locked, h.ino) // no process holds a descriptor, so no fcntl lock, here
		}
	}
}

// localSize is the largest size this mount knows of ino while it is open
// here (0 if not): metad learns of writes only when writers close or sync.
func (f *fileSystem) localSize(ino uint64) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if oi := f.opened[ino]; oi != nil {
		return sizeLocked(oi)
	}
	return 0
}

// readerFor returns the read view of an open inode (nil if not open here).
func (f *fileSystem) readerFor(ctx context.Context, ino uint64) (*client.File, error) {
	if err := f.spillHeld(ctx, ino); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	oi := f.opened[ino]
	if oi == nil {
		return nil, nil
	}
	size := sizeLocked(oi)
	if oi.reader != nil && oi.reader.Size() == size {
		return oi.reader, nil
	}
	in := oi.inode
	in.Length = size
	r, err := f.fs.OpenInode(ctx, in, nil)
	if err != nil {
		return nil, err
	}
	oi.reader = r
	return r, nil
}

// spillHeld sends to storage what this mount's write handles of ino hold
// for an inline close (core/client/inline.go): reads go through the read
// view, which reads storage.
func (f *fileSystem) spillHeld(ctx context.Context, ino uint64) error {
	var held []*client.File
	f.mu.Lock()
	if oi := f.opened[ino]; oi != nil {
		for h := range oi.handles {
			if file := h.f.Load(); h.write && file.Holding() {
				held = append(held, file)
			}
		}
	}
	f.mu.Unlock()
	for _, file := range held {
		if err := file.Spill(ctx); err != nil {
			return err
		}
	}
	return nil
}

// openOf returns the open state of ino (nil if not open here).
func (f *fileSystem) openOf(ino uint64) *openInode {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opened[ino]
}

// writer returns an open write handle of ino, or nil.
func (f *fileSystem) writer(ino uint64) *handle {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writerLocked(ino)
}

// writingLocked reports whether a handle here is writing ino; the caller
// holds f.mu.
func (f *fileSystem) writingLocked(ino uint64) bool { return f.writerLocked(ino) != nil }

// writingNow reports whether a handle here has a write session open or
// bytes not yet sent: a handle whose close(2) flushed and ended its session
// stays until the kernel's release, which comes later, and copies in
// between need not wait for it.
func (f *fileSystem) writingNow(ino uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writingNowLocked(ino)
}

func (f *fileSystem) writingNowLocked(ino uint64) bool {
	if oi := f.opened[ino]; oi != nil {
		for h := range oi.handles {
			if h.write && (h.live.Load() || h.dirty.Load()) {
				return true
			}
		}
	}
	return false
}

func (f *fileSystem) writerLocked(ino uint64) *handle {
	if oi := f.opened[ino]; oi != nil {
		for h := range oi.handles {
			if h.write {
				return h
			}
		}
	}
	return nil
}

// keepCache reports whether the kernel may keep the page cache of in from
// an earlier open: nothing changed the file since (same Gen and length).
func (f *fileSystem) keepCache(in metaapi.Inode) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev, ok := f.seenGen[in.ID]
	if len(f.seenGen) > 1<<20 {
		clear(f.seenGen)
	}
	f.seenGen[in.ID] = genSeen{in.Gen, in.Length}
	return ok && prev == genSeen{in.Gen, in.Length}
}

// noteOwnWrites: a write session that began with the inode at from ended
// at in, every change between them its own. If the page cache held the file
// as of from, it now holds it as of in (the writes went through it), and the
// next open may keep it.
func (f *fileSystem) noteOwnWrites(ino uint64, from genSeen, in metaapi.Inode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if prev, ok := f.seenGen[ino]; ok && prev == from {
		f.seenGen[ino] = genSeen{in.Gen, in.Length}
	}
}

// writeAt writes through the handle's session, opening a new one if the
// last was ended by a close of a duplicate descriptor.
func (h *handle) writeAt(ctx context.Context, f *fileSystem, p []byte, off int64) (int, error) {
	if uint64(off)+uint64(len(p)) > metaapi.MaxFileSize {
		return 0, syscall.EFBIG
	}
	h.mu.RLock()
	for !h.live.Load() {
		h.mu.RUnlock()
		if err := h.reopen(ctx, f); err != nil {
			return 0, err
		}
		h.mu.RLock()
	}
	defer h.mu.RUnlock()
	h.dirty.Store(true)
	h.shared.Store(nil)
	return h.f.Load().WriteAtContext(ctx, p, off)
}

// holds reports whether a write of n bytes at off would only be copied
// into the bytes the handle holds for an inline close: such a write runs in
// the request, since handing it to a goroutine costs a wakeup that the
// close right after it waits for.
func (h *handle) holds(off int64, n int) bool {
	return h.live.Load() && h.f.Load().Holds(off, n)
}

func (h *handle) reopen(ctx context.Context, f *fileSystem) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live.Load() {
		return nil
	}
	in, session, err := f.meta.Open(ctx, h.ino, os.O_WRONLY, h.creds)
	if err != nil {
		return err
	}
	file, err := f.fs.OpenInode(ctx, in, session)
	if err != nil {
		return err
	}
	h.f.Store(file)
	h.from = genSeen{in.Gen, in.Length}
	h.live.Store(true)
	f.noteInode(in)
	return nil
}

// closeSession ends the write session (settling the file's length with
// metad). The settled inode is noted
// before the handle stops counting as a writer, so the length this mount
// knows never dips in between.
func (h *handle) closeSession(ctx context.Context, f *fileSystem) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.live.Load() {
		return nil
	}
	file := h.f.Load()
	h.dirty.Store(false)
	err := file.CloseContext(ctx)
	if err == nil {
		in := file.Inode()
		f.noteInode(in)
		if file.SoleWriter() {
			f.noteOwnWrites(h.ino, h.from, in)
			f.noteClosedAttr(h, in)
		}
	}
	// A failed close leaves the session to metad's reaper; writing again
	// opens a new one.
	h.live.Store(false)
	return err
}

func (f *fileSystem) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	ctx, done := f.ctx(cancel)
	defer done()
	if isVersNode(in.NodeId) {
		return f.versOpen(ctx, in, out)
	}
	if isVirt(in.NodeId) {
		return f.virtOpen(in, out)
	}
	c := creds(&in.InHeader)
	defer f.forgetAttrs(in.NodeId)
	ino, session, err := f.meta.Open(ctx, in.NodeId, openFlags(in.Flags)&^os.O_TRUNC, c)
	if client.Errno(err) == syscall.ENOENT {
		// The kernel's entry names a file another client removed: ESTALE
		// makes it look the name up again (and an O_CREAT create it)
		// instead of failing the open.
		return fuse.Status(syscall.ESTALE)
	}
	if err != nil {
		return f.status(ctx, "open", err)
	}
	if in.Flags&syscall.O_TRUNC != 0 && ino.Length > 0 {
		if ino, err = f.truncateOnOpen(ctx, ino); err != nil {
			return f.status(ctx, "open", err)
		}
	}
	file, err := f.fs.OpenInode(ctx, ino, session)
	if err != nil {
		return f.status(ctx, "open", err)
	}
	// A window read before this open must not land in the page cache after
	// it: the kernel drops the cache at this open, or a writer comes.
	keep := f.keepCache(ino)
	if !keep || isWrite(in.Flags) {
		f.ra.fence()
	}
	h := f.addHandle(ino, file, session != nil, in.Flags, c)
	out.Fh = h.id
	if keep {
		out.OpenFlags |= fuse.FOPEN_KEEP_CACHE
	}
	return fuse.OK
}

func (f *fileSystem) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	if st, ok := f.virtRefuse(in.NodeId, name); ok {
		return st
	}
	if len(name) > maxName {
		return fuse.Status(syscall.ENAMETOOLONG)
	}
	ctx, done := f.ctx(cancel)
	defer done()
	c := creds(&in.InHeader)
	c.Umask = in.Umask // the kernel leaves it to metad (CAP_DONT_MASK)
	ino, session, created, err := f.meta.Create(ctx, in.NodeId, name, in.Mode&07777, openFlags(in.Flags)&^os.O_TRUNC, c)
	if err != nil {
		f.forgetAttrs(in.NodeId)
		return f.status(ctx, "create", err)
	}
	if created {
		// The new entry's time is the new file's ctime.
		f.dirChanged(in.NodeId, ino.Ctime)
	}
	if !created && in.Flags&syscall.O_TRUNC != 0 && ino.Length > 0 {
		if ino, err = f.truncateOnOpen(ctx, ino); err != nil {
			return f.status(ctx, "create", err)
		}
	}
	file, err := f.fs.OpenInode(ctx, ino, session)
	if err != nil {
		return f.status(ctx, "create", err)
	}
	h := f.addHandle(ino, file, session != nil, in.Flags, c)
	f.keepCache(ino)
	f.forgetAttrs(ino.ID)
	f.fillEntry(ino, &out.EntryOut)
	out.OpenOut.Fh = h.id
	return fuse.OK
}

// truncateOnOpen empties a file opened with O_TRUNC. It goes through
// SetAttr rather than the open's own O_TRUNC because only SetAttr also
// removes the file's chunks: a truncate that leaves them makes the length
// settled at close find the old end again.
func (f *fileSystem) truncateOnOpen(ctx context.Context, in metaapi.Inode) (metaapi.Inode, error) {
	return f.meta.SetAttr(ctx, in.ID, metaapi.SetAttrReq{Mask: metaapi.SetSize, Size: 0})
}

// Mknod makes regular files, fifos, sockets (bind) and devices. Only the
// inode is flyfs's: the kernel carries a special file's data (and refuses to
// open devices on this nodev mount), so nothing of it reaches us but its
// attributes.
func (f *fileSystem) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	if st, ok := f.virtRefuse(in.NodeId, name); ok {
		return st
	}
	var typ metaapi.Type
	switch in.Mode & syscall.S_IFMT {
	case syscall.S_IFREG, 0:
		typ = metaapi.TypeFile
	case syscall.S_IFIFO:
		typ = metaapi.TypeFifo
	case syscall.S_IFSOCK:
		typ = metaapi.TypeSocket
	case syscall.S_IFCHR:
		typ = metaapi.TypeCharDev
	case syscall.S_IFBLK:
		typ = metaapi.TypeBlockDev
	default:
		return fuse.EINVAL
	}
	if len(name) > maxName {
		return fuse.Status(syscall.ENAMETOOLONG)
	}
	ctx, done := f.ctx(cancel)
	defer done()
	defer f.forgetAttrs(in.NodeId)
	var ino metaapi.Inode
	var err error
	c := creds(&in.InHeader)
	c.Umask = in.Umask // the kernel leaves it to metad (CAP_DONT_MASK)
	if typ == metaapi.TypeFile {
		ino, _, _, err = f.meta.Create(ctx, in.NodeId, name, in.Mode&07777, os.O_EXCL, c)
	} else {
		ino, err = f.meta.Mknod(ctx, in.NodeId, name, typ, in.Mode&07777, in.Rdev, c)
	}
	if err != nil {
		return f.status(ctx, "mknod", err)
	}
	f.fillEntry(ino, out)
	return fuse.OK
}

func (f *fileSystem) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	if isVirt(in.Fh) {
		return f.virtRead(in)
	}
	h := f.handle(in.Fh)
	if h == nil {
		return nil, fuse.EBADF
	}
	h.oi.q.wait() // this mount's queued writes first
	ctx, done := f.ctx(cancel)
	defer done()
	file, err := f.readerFor(ctx, h.ino)
	if err != nil {
		return nil, f.status(ctx, "read", err)
	}
	if file != nil && len(buf) >= int(in.Size) {
		if lo, hi, ok := f.ra.span(in.Offset, uint64(in.Size), file.Size()); ok && f.writer(h.ino) == nil {
			return f.readAround(ctx, h.ino, file, in, buf, lo, hi)
		}
	}
	n, err := file.ReadAtContext(ctx, buf[:min(int(in.Size), len(buf))], int64(in.Offset))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, f.status(ctx, "read", err)
	}
	return fuse.ReadResultData(buf[:n]), fuse.OK
}

func (f *fileSystem) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	h := f.handle(in.Fh)
	if h == nil || !h.write {
		return 0, fuse.EBADF
	}
	off := int64(in.Offset)
	if uint64(off)+uint64(len(data)) > metaapi.MaxFileSize {
		return 0, fuse.Status(syscall.EFBIG)
	}
	ctx, done := f.ctx(cancel)
	defer done()
	if !h.sync && !h.holds(off, len(data)) {
		if err := f.writeBehind(h, data, off); err != nil {
			return 0, f.status(ctx, "write", err)
		}
		return uint32(len(data)), fuse.OK
	}
	n, err := f.writeThrough(ctx, h, data, off)
	if err != nil {
		return 0, f.status(ctx, "write", err)
	}
	return uint32(n), fuse.OK
}

// writeThrough writes and waits for storage, in order with queued writes.
func (f *fileSystem) writeThrough(ctx context.Context, h *handle, data []byte, off int64) (int, error) {
	r, err := h.oi.q.begin(uint64(off), uint64(off)+uint64(len(data)))
	if err != nil {
		return 0, err
	}
	n, err := h.writeAt(ctx, f, data, off)
	h.oi.q.done(r, nil)
	return n, err
}

// Flush runs on every close(2): a handle that wrote ends its session here,
// so the data and length are settled when close returns.
func (f *fileSystem) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	f.releasePOSIXLocks(cancel, in)
	h := f.handle(in.Fh)
	if h == nil || !h.write {
		return fuse.OK
	}
	ctx, done := f.ctx(cancel)
	defer done()
	if err := h.oi.q.drain(); err != nil {
		return f.status(ctx, "write", err)
	}
	if !h.dirty.Load() {
		return fuse.OK
	}
	if err := h.closeSession(ctx, f); err != nil {
		return f.status(ctx, "close", err)
	}
	return fuse.OK
}

// Fsync makes the file's data and attributes durable, and with them every
// namespace change this mount made before (the store has one log), as
// fsync(2) of a file and of its directory do on a local file system.
func (f *fileSystem) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	h := f.handle(in.Fh)
	if h == nil {
		return fuse.OK
	}
	ctx, done := f.ctx(cancel)
	defer done()
	if h.write {
		if err := h.oi.q.drain(); err != nil {
			return f.status(ctx, "write", err)
		}
		if err := h.syncWrites(ctx); err != nil {
			return f.status(ctx, "fsync", err)
		}
	}
	return f.status(ctx, "fsync", f.fs.Sync(ctx))
}

func (f *fileSystem) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	if isVirt(in.Fh) {
		f.virtRelease(in.Fh)
		return
	}
	f.releaseFlock(cancel, in)
	h := f.handle(in.Fh)
	if h == nil {
		return
	}
	if h.write {
		ctx, done := f.ctx(cancel)
		defer done()
		if err := h.oi.q.drain(); err != nil {
			f.opts.Log.Warn("fusefs: a queued write failed and no close reported it", "ino", h.ino, "err", err)
		}
		if err := h.closeSession(ctx, f); err != nil {
			f.opts.Log.Warn("fusefs: closing a write session on release failed", "ino", h.ino, "err", err)
		}
	}
	f.dropHandle(h)
}

// Fallocate supports mode 0 (reserve, extending the size): flyfs allocates
// chunks as they are written, so only the size changes.
func (f *fileSystem) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	if in.Mode != 0 {
		return fuse.Status(syscall.EOPNOTSUPP)
	}
	end := in.Offset + in.Length
	if end < in.Offset || end > metaapi.MaxFileSize {
		return fuse.Status(syscall.EFBIG)
	}
	ctx, done := f.ctx(cancel)
	defer done()
	ino, err := f.meta.Stat(ctx, in.NodeId)
	if err != nil {
		return f.status(ctx, "fallocate", err)
	}
	if end <= max(ino.Length, f.localSize(in.NodeId)) {
		return fuse.OK
	}
	_, err = f.truncate(ctx, in.NodeId, end)
	return f.status(ctx, "fallocate", err)
}

// reportWriters sends metad the length and version of everything this
// mount's live write sessions of ino wrote so far (their queued writes
// first), as fsync does: a close then reports a change only for what is
// written after this.
func (f *fileSystem) reportWriters(ctx context.Context, ino uint64) error {
	f.mu.Lock()
	var hs []*handle
	oi := f.opened[ino]
	if oi != nil {
		for h := range oi.handles {
			if h.write {
				hs = append(hs, h)
			}
		}
	}
	f.mu.Unlock()
	if oi == nil {
		return nil
	}
	oi.q.wait() // a failed write stays for the next fsync or close to report
	for _, h := range hs {
		if err := h.syncWrites(ctx); err != nil {
			return err
		}
	}
	return nil
}

// truncate sets a file's size. Live write sessions of this mount truncate
// through their file, so their own idea of the length follows.
func (f *fileSystem) truncate(ctx context.Context, ino uint64, size uint64) (metaapi.Inode, error) {
	f.mu.Lock()
	var hs []*handle
	oi := f.opened[ino]
	if oi != nil {
		for h := range oi.handles {
			if h.write {
				hs = append(hs, h)
			}
		}
	}
	f.mu.Unlock()
	if oi != nil {
		oi.q.wait() // queued writes land before the cut
	}
	var in metaapi.Inode
	var err error
	done := false
	for _, h := range hs {
		h.mu.RLock()
		if h.live.Load() {
			file := h.f.Load()
			h.shared.Store(nil)
			if err = file.Truncate(ctx, int64(size)); err != nil {
				h.mu.RUnlock()
				return metaapi.Inode{}, err
			}
			in, done = file.Inode(), true
		}
		h.mu.RUnlock()
	}
	if !done {
		if in, err = f.meta.SetAttr(ctx, ino, metaapi.SetAttrReq{Mask: metaapi.SetSize, Size: size}); err != nil {
			return in, err
		}
	}
	f.noteInode(in)
	return in, nil
}
