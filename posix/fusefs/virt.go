package fusefs

import (
	"context"
	"encoding/json"
	"sort"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/posix/native"
)

// The hidden directory /.flyfs is served by the mount itself: a symlink
// created in it registers a native-API buffer or ring (see posix/native),
// unlinking it deregisters. Its node ids have the top bit set, which flyfs
// inode ids never reach.
const (
	virtBit   = 1 << 63
	virtDirID = virtBit
	// virtCacheID is /.flyfs/cache, a read-only file of the mount's cache
	// counters in JSON (flyfs admin cache stats reads it). Registrations'
	// ids (virtBit | a sequence number) never reach its bit.
	virtCacheID   = virtBit | 1<<62
	virtCacheName = "cache"
)

func isVirt(id uint64) bool { return id&virtBit != 0 }

var mountTime = time.Now()

func virtDirAttr(a *fuse.Attr) {
	*a = fuse.Attr{Ino: virtDirID, Mode: syscall.S_IFDIR | 01777, Nlink: 2, Size: 4096, Blksize: 4096}
	a.SetTimes(&mountTime, &mountTime, &mountTime)
}

func virtCacheAttr(a *fuse.Attr) {
	*a = fuse.Attr{Ino: virtCacheID, Mode: syscall.S_IFREG | 0o444, Nlink: 1, Blksize: 4096}
	a.SetTimes(&mountTime, &mountTime, &mountTime)
}

func virtEntryAttr(e native.Entry, a *fuse.Attr) {
	*a = fuse.Attr{Ino: virtBit | e.Seq, Mode: syscall.S_IFLNK | 0o777, Nlink: 1, Size: uint64(len(e.Target)), Blksize: 4096}
	a.Uid, a.Gid = e.UID, e.GID
	a.SetTimes(&e.Time, &e.Time, &e.Time)
}

func (f *fileSystem) virtEntry(id uint64) (native.Entry, bool) {
	for _, e := range f.native.List() {
		if virtBit|e.Seq == id {
			return e, true
		}
	}
	return native.Entry{}, false
}

// virtLookup answers lookups of /.flyfs and inside it; ok is false for
// everything else.
func (f *fileSystem) virtLookup(parent uint64, name string, out *fuse.EntryOut) (fuse.Status, bool) {
	switch {
	case parent == rootID && name == native.VirtDir:
		*out = fuse.EntryOut{NodeId: virtDirID, Generation: 1}
		virtDirAttr(&out.Attr)
		out.SetEntryTimeout(f.opts.EntryTimeout)
		out.SetAttrTimeout(f.opts.AttrTimeout)
		return fuse.OK, true
	case parent == virtDirID && name == virtCacheName:
		*out = fuse.EntryOut{NodeId: virtCacheID, Generation: 1}
		virtCacheAttr(&out.Attr)
		return fuse.OK, true
	case parent == virtDirID:
		e, ok := f.native.Lookup(name)
		if !ok {
			return fuse.ENOENT, true
		}
		// No caching: registrations come and go under the kernel's feet.
		*out = fuse.EntryOut{NodeId: virtBit | e.Seq, Generation: 1}
		virtEntryAttr(e, &out.Attr)
		return fuse.OK, true
	case isVirt(parent):
		return fuse.ENOTDIR, true
	}
	return fuse.OK, false
}

func (f *fileSystem) virtGetAttr(id uint64, out *fuse.AttrOut) (fuse.Status, bool) {
	switch {
	case id == virtDirID:
		virtDirAttr(&out.Attr)
		out.SetTimeout(f.opts.AttrTimeout)
		return fuse.OK, true
	case id == virtCacheID:
		virtCacheAttr(&out.Attr)
		return fuse.OK, true
	case isVirt(id):
		e, ok := f.virtEntry(id)
		if !ok {
			return fuse.ENOENT, true
		}
		virtEntryAttr(e, &out.Attr)
		return fuse.OK, true
	}
	return fuse.OK, false
}

// virtRefuse refuses namespace changes inside the virtual directory and to
// the name /.flyfs itself.
func (f *fileSystem) virtRefuse(parent uint64, name string) (fuse.Status, bool) {
	if isVirt(parent) || (parent == rootID && name == native.VirtDir) {
		return fuse.EPERM, true
	}
	if name == VersionsDirName && f.inVersionedBucket(parent) {
		return fuse.EPERM, true
	}
	return fuse.OK, false
}

func (f *fileSystem) virtSymlink(h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	e, err := f.native.Register(name, target, native.Caller{UID: h.Uid, GID: h.Gid, PID: h.Pid})
	if err != nil {
		return fuse.ToStatus(err)
	}
	*out = fuse.EntryOut{NodeId: virtBit | e.Seq, Generation: 1}
	virtEntryAttr(e, &out.Attr)
	return fuse.OK
}

func (f *fileSystem) virtUnlink(h *fuse.InHeader, name string) fuse.Status {
	if name == virtCacheName {
		return fuse.EPERM
	}
	e, ok := f.native.Lookup(name)
	if !ok {
		return fuse.ENOENT
	}
	if h.Uid != 0 && h.Uid != e.UID {
		return fuse.EPERM
	}
	return fuse.ToStatus(f.native.Deregister(name))
}

func (f *fileSystem) virtReadlink(id uint64) ([]byte, fuse.Status) {
	e, ok := f.virtEntry(id)
	if !ok {
		return nil, fuse.ENOENT
	}
	return []byte(e.Target), fuse.OK
}

func (f *fileSystem) virtEntries() []metaapi.DirEntry {
	list := f.native.List()
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	out := []metaapi.DirEntry{{Name: virtCacheName, Ino: virtCacheID, Type: metaapi.TypeFile}}
	for _, e := range list {
		out = append(out, metaapi.DirEntry{Name: e.Name, Ino: virtBit | e.Seq, Type: metaapi.TypeSymlink})
	}
	return out
}

// virtOpen opens /.flyfs/cache: the counters as they are now, read whole
// or in pieces from this snapshot (direct I/O: the size is not known
// ahead).
func (f *fileSystem) virtOpen(in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if in.NodeId != virtCacheID || isWrite(in.Flags) {
		return fuse.EACCES
	}
	data, err := json.MarshalIndent(f.fs.CacheStats(), "", "  ")
	if err != nil {
		return fuse.EIO
	}
	f.mu.Lock()
	f.nextFH++
	fh := virtBit | f.nextFH
	f.virtFiles[fh] = append(data, '\n')
	f.mu.Unlock()
	out.Fh, out.OpenFlags = fh, fuse.FOPEN_DIRECT_IO
	return fuse.OK
}

func (f *fileSystem) virtRead(in *fuse.ReadIn) (fuse.ReadResult, fuse.Status) {
	f.mu.Lock()
	data, ok := f.virtFiles[in.Fh]
	f.mu.Unlock()
	if !ok {
		return nil, fuse.EBADF
	}
	if in.Offset >= uint64(len(data)) {
		return fuse.ReadResultData(nil), fuse.OK
	}
	data = data[in.Offset:]
	return fuse.ReadResultData(data[:min(len(data), int(in.Size))]), fuse.OK
}

func (f *fileSystem) virtRelease(fh uint64) {
	f.mu.Lock()
	delete(f.virtFiles, fh)
	f.mu.Unlock()
}

// nativeBackend does the native API's IOs on this mount's open files.
type nativeBackend struct{ f *fileSystem }

// Prefetch fills the mount's cache with a range of an open file.
func (b nativeBackend) Prefetch(ctx context.Context, ino uint64, off, n int64) (int64, error) {
	if oi := b.f.openOf(ino); oi != nil {
		oi.q.wait()
	}
	file, err := b.f.readerFor(ctx, ino)
	if err != nil {
		return 0, err
	}
	if file == nil {
		return 0, syscall.EBADF
	}
	return file.Prefetch(ctx, off, n)
}

func (b nativeBackend) ReadAt(ctx context.Context, ino uint64, p []byte, off int64) (int, error) {
	if oi := b.f.openOf(ino); oi != nil {
		oi.q.wait()
	}
	file, err := b.f.readerFor(ctx, ino)
	if err != nil {
		return 0, err
	}
	if file == nil {
		return 0, syscall.EBADF
	}
	return file.ReadAtContext(ctx, p, off)
}

// ReadV reads many ranges of one file in one call (client.File.ReadV: the
// small pieces go in one RPC per storage service).
func (b nativeBackend) ReadV(ctx context.Context, ino uint64, bufs [][]byte, offs []int64) ([]int, error) {
	if oi := b.f.openOf(ino); oi != nil {
		oi.q.wait()
	}
	file, err := b.f.readerFor(ctx, ino)
	if err != nil {
		return nil, err
	}
	if file == nil {
		return nil, syscall.EBADF
	}
	reqs := make([]client.ReadReq, len(bufs))
	for i := range bufs {
		reqs[i] = client.ReadReq{Off: offs[i], Buf: bufs[i]}
	}
	if err := file.ReadV(ctx, reqs); err != nil {
		return nil, err
	}
	ns := make([]int, len(reqs))
	for i, r := range reqs {
		ns[i] = r.N
	}
	return ns, nil
}

var _ native.ReadVBackend = nativeBackend{}

func (b nativeBackend) WriteAt(ctx context.Context, ino uint64, p []byte, off int64) (int, error) {
	h := b.f.writer(ino)
	if h == nil {
		return 0, syscall.EBADF
	}
	n, err := b.f.writeThrough(ctx, h, p, off)
	if n > 0 && b.f.srv != nil {
		// The kernel's cached pages and size of this range are stale now.
		b.f.srv.InodeNotify(ino, off, int64(n))
	}
	return n, err
}

// Access applies the mode bits for the ring's owner, as the kernel does for
// an open (supplementary groups are not known here: only the primary one).
func (b nativeBackend) Access(ctx context.Context, ino uint64, uid, gid uint32, write bool) error {
	in, err := b.f.meta.Stat(ctx, ino)
	if err != nil {
		return err
	}
	if in.Type != metaapi.TypeFile {
		return syscall.EISDIR
	}
	if uid == 0 {
		return nil
	}
	want := uint32(4)
	if write {
		want = 2
	}
	var bits uint32
	switch {
	case uid == in.UID:
		bits = in.Mode >> 6
	case gid == in.GID:
		bits = in.Mode >> 3
	default:
		bits = in.Mode
	}
	if bits&want == 0 {
		return syscall.EACCES
	}
	return nil
}
