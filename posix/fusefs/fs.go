package fusefs

import (
	"context"
	"errors"
	"github.com/flyfs/flyfs/core/durability"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/posix/native"
)

// rootID is the kernel's root node id; flyfs's root inode has the same id.
const rootID = fuse.FUSE_ROOT_ID

// maxName is the longest name a directory entry may have.
const maxName = 255

// fileSystem implements fuse.RawFileSystem. Operations it does not define
// answer ENOSYS (the embedded default), which tells the kernel to fall back
// (lseek, copy_file_range) or to stop asking.
type fileSystem struct {
	fuse.RawFileSystem

	fs   *client.FS
	meta *client.Meta
	opts Options
	srv  *fuse.Server
	base context.Context
	stop context.CancelFunc

	mu     sync.Mutex
	nextFH uint64
	files  map[uint64]*handle // open files by handle id
	// virtFiles are the open /.flyfs/cache files (handle ids with virtBit),
	// each its snapshot.
	virtFiles map[uint64][]byte
	opened    map[uint64]*openInode // open files by inode
	dirs      map[uint64]*dirHandle // open directories by handle id
	seenGen   map[uint64]genSeen    // what the page cache of an inode holds
	// known are attributes the mount answers itself (knownattrs.go).
	known  map[uint64]knownAttr
	locked map[uint64]bool // files this mount took fcntl locks on (locks.go)
	native *native.Daemon
	vers   versTable // the nodes of the old versions' view (versionsview.go)
	ra     *readAround
	behind atomic.Uint64 // writes handed to write-behind goroutines
}

type genSeen struct{ gen, length uint64 }

func newFileSystem(fs *client.FS, opts Options) *fileSystem {
	// A local file system's changes are durable at fsync(2) (or within its
	// commit interval), not when the call returns: the mount asks the
	// cluster for the same (durability.Relaxed), and for durability at fsync.
	base, stop := context.WithCancel(durability.Relaxed(context.Background()))
	f := &fileSystem{
		RawFileSystem: fuse.NewDefaultRawFileSystem(),
		fs:            fs,
		meta:          fs.Meta(),
		opts:          opts,
		base:          base,
		stop:          stop,
		files:         map[uint64]*handle{},
		virtFiles:     map[uint64][]byte{},
		opened:        map[uint64]*openInode{},
		dirs:          map[uint64]*dirHandle{},
		seenGen:       map[uint64]genSeen{},
		known:         map[uint64]knownAttr{},
	}
	f.native = native.NewDaemon(nativeBackend{f}, opts.OpTimeout, opts.Log)
	f.ra = newReadAround(readAroundWindow(opts.ReadAroundKB), opts.ReadAroundMaxFile)
	return f
}

func (f *fileSystem) String() string { return "flyfs" }

func (f *fileSystem) Init(s *fuse.Server) { f.srv = s }

// shutdown runs when the serving loop ends: drop the native registrations
// and close the write sessions of files still open.
func (f *fileSystem) shutdown() {
	f.native.Close()
	f.mu.Lock()
	hs := make([]*handle, 0, len(f.files))
	for _, h := range f.files {
		hs = append(hs, h)
	}
	f.files = map[uint64]*handle{}
	f.opened = map[uint64]*openInode{}
	f.mu.Unlock()
	for _, h := range hs {
		ctx, cancel := context.WithTimeout(context.Background(), f.opts.OpTimeout)
		h.closeSession(ctx, f)
		cancel()
	}
	f.stop()
}

// ctx bounds one operation by the op timeout. The kernel's interrupts are
// not honoured: Go programs get signals all the time (goroutine preemption),
// and a close(2) or write(2) failing with EINTR because of one breaks them; a
// process that is killed leaves the call anyway, and the op timeout bounds
// everything else.
func (f *fileSystem) ctx(cancel <-chan struct{}) (context.Context, context.CancelFunc) {
	return context.WithTimeout(f.base, f.opts.OpTimeout)
}

// status maps an error to the errno the caller sees: the errno the cluster
// sent, EIO past the op timeout or on anything else.
func (f *fileSystem) status(ctx context.Context, op string, err error) fuse.Status {
	if err == nil {
		return fuse.OK
	}
	// A network failure carries an errno of the connection (ECONNREFUSED,
	// ECONNRESET...), which is not the file's: the caller sees EIO.
	var ne *net.OpError
	if errors.As(err, &ne) || ctx.Err() != nil {
		f.opts.Log.Warn("fusefs: the cluster did not answer", "op", op, "err", err)
		return fuse.EIO
	}
	if e := client.Errno(err); e != 0 {
		return fuse.Status(e)
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return fuse.Status(e)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded:
		f.opts.Log.Warn("fusefs: operation timed out", "op", op, "timeout", f.opts.OpTimeout, "err", err)
		return fuse.EIO
	}
	f.opts.Log.Warn("fusefs: operation failed", "op", op, "err", err)
	return fuse.EIO
}

// unknownFree is the free space statfs reports when no Capacity source is
// configured: large, so tools that check for room proceed.
const unknownFree = 1 << 50

func creds(h *fuse.InHeader) client.Creds { return client.Creds{UID: h.Uid, GID: h.Gid} }

// fillAttr converts an inode; size takes this mount's unsettled writes
// into account.
func (f *fileSystem) fillAttr(in metaapi.Inode, a *fuse.Attr) {
	*a = fuse.Attr{}
	a.Ino = in.ID
	size := in.Length
	a.Mode = typeMode(in.Type)
	switch in.Type {
	case metaapi.TypeDir:
		size = 4096
	case metaapi.TypeSymlink:
		size = uint64(len(in.Target))
	case metaapi.TypeFile:
		size = max(size, f.localSize(in.ID))
		f.checkCache(in)
	default: // special files: the kernel carries their data
		size = 0
		a.Rdev = in.Rdev
	}
	a.Mode |= in.Mode & 07777
	a.Size = size
	a.Blocks = (size + 511) / 512
	a.Blksize = 1 << 20 // tools size their buffers by it
	a.Nlink = in.Nlink  // 0 for a file open here after its last name went
	a.Uid, a.Gid = in.UID, in.GID
	a.Atime, a.Atimensec = splitNs(in.Atime)
	a.Mtime, a.Mtimensec = splitNs(in.Mtime)
	a.Ctime, a.Ctimensec = splitNs(in.Ctime)
}

// checkCache drops the page cache of a file whose data changed since the
// cache was filled. The kernel leaves that to us (ExplicitDataCacheControl):
// it would go by the mtime, which our own writes change too (metad stamps
// them at the close, not the kernel), and lose the cache of every file
// written here; Gen tells a change apart. A file this mount is writing is
// left alone: the changes are its own until the close says otherwise.
// The notification goes out after the reply: the kernel may be waiting
// for it with pages locked.
func (f *fileSystem) checkCache(in metaapi.Inode) {
	now := genSeen{in.Gen, in.Length}
	f.mu.Lock()
	prev, ok := f.seenGen[in.ID]
	stale := ok && prev != now && !f.writingLocked(in.ID)
	if stale {
		f.seenGen[in.ID] = now
	}
	srv := f.srv
	f.mu.Unlock()
	if stale && srv != nil {
		go func() {
			f.ra.fence()
			srv.InodeNotify(in.ID, 0, 0)
		}()
	}
}

func splitNs(ns int64) (uint64, uint32) {
	if ns < 0 {
		return 0, 0
	}
	return uint64(ns / 1e9), uint32(ns % 1e9)
}

func (f *fileSystem) fillEntry(in metaapi.Inode, out *fuse.EntryOut) {
	out.NodeId = in.ID
	out.Generation = 1
	f.fillAttr(in, &out.Attr)
	out.SetEntryTimeout(f.opts.EntryTimeout)
	out.SetAttrTimeout(f.opts.AttrTimeout)
}

func (f *fileSystem) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	ctx, done := f.ctx(cancel)
	defer done()
	if st, ok := f.versLookup(ctx, h.NodeId, name, out); ok {
		return st
	}
	if st, ok := f.virtLookup(h.NodeId, name, out); ok {
		return st
	}
	if len(name) > maxName {
		return fuse.Status(syscall.ENAMETOOLONG)
	}
	in, err := f.meta.Lookup(ctx, h.NodeId, name)
	if client.Errno(err) == syscall.ENOENT {
		// A negative entry: the kernel remembers the name is absent for
		// the entry timeout (a create here replaces it at once).
		*out = fuse.EntryOut{}
		out.SetEntryTimeout(f.opts.EntryTimeout)
		return fuse.OK
	}
	if err != nil {
		return f.status(ctx, "lookup", err)
	}
	f.noteDirAttr(in)
	f.fillEntry(in, out)
	return fuse.OK
}

// Forget needs nothing: node ids are inode ids, nothing is held per node.
func (f *fileSystem) Forget(nodeid, nlookup uint64) {}

func (f *fileSystem) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	ctx, done := f.ctx(cancel)
	defer done()
	if isVersNode(in.NodeId) {
		return f.versGetAttr(ctx, in.NodeId, out)
	}
	if st, ok := f.virtGetAttr(in.NodeId, out); ok {
		return st
	}
	ino, ok := f.takeAttr(in.NodeId)
	if !ok {
		var err error
		if ino, err = f.meta.Stat(ctx, in.NodeId); err != nil {
			return f.status(ctx, "getattr", err)
		}
		f.noteDirAttr(ino)
	}
	f.fillAttr(ino, &out.Attr)
	out.SetTimeout(f.opts.AttrTimeout)
	return fuse.OK
}

func (f *fileSystem) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	if isVirt(in.NodeId) {
		return fuse.EPERM
	}
	ctx, done := f.ctx(cancel)
	defer done()
	defer f.forgetAttrs(in.NodeId)
	var req metaapi.SetAttrReq
	if m, ok := in.GetMode(); ok {
		req.Mask |= metaapi.SetMode
		req.Mode = m & 07777
	}
	if u, ok := in.GetUID(); ok {
		req.Mask |= metaapi.SetUID
		req.UID = u
	}
	if g, ok := in.GetGID(); ok {
		req.Mask |= metaapi.SetGID
		req.GID = g
	}
	if t, ok := in.GetATime(); ok {
		req.Mask |= metaapi.SetAtime
		req.Atime = t.UnixNano()
	}
	if t, ok := in.GetMTime(); ok {
		req.Mask |= metaapi.SetMtime
		req.Mtime = t.UnixNano()
		if in.Valid&fuse.FATTR_MTIME_NOW == 0 {
			// An explicit mtime (tar, cp -p, touch -d) must outlive the
			// write sessions open here: report what they wrote now, so
			// their close has nothing left to stamp its own time over it.
			if err := f.reportWriters(ctx, in.NodeId); err != nil {
				return f.status(ctx, "setattr", err)
			}
		}
	}
	var ino metaapi.Inode
	var err error
	if size, ok := in.GetSize(); ok {
		if size > metaapi.MaxFileSize {
			return fuse.Status(syscall.EFBIG)
		}
		f.ra.fence()
		ino, err = f.truncate(ctx, in.NodeId, size)
		if err != nil {
			return f.status(ctx, "truncate", err)
		}
	}
	if req.Mask != 0 || ino.ID == 0 {
		ino, err = f.meta.SetAttr(ctx, in.NodeId, req)
		if err != nil {
			return f.status(ctx, "setattr", err)
		}
	}
	f.fillAttr(ino, &out.Attr)
	out.SetTimeout(f.opts.AttrTimeout)
	return fuse.OK
}

func (f *fileSystem) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	ctx, done := f.ctx(cancel)
	defer done()
	st, err := f.meta.StatFS(ctx)
	if err != nil {
		return f.status(ctx, "statfs", err)
	}
	const bsize = 4096
	*out = fuse.StatfsOut{Bsize: bsize, Frsize: bsize, NameLen: maxName}
	// Used is what the files hold (metad's count) unless the disks report
	// more; free comes from the disks when known.
	used := uint64(max(st.Bytes, 0))
	free := uint64(unknownFree)
	if f.opts.Capacity != nil {
		if u, fr, err := f.opts.Capacity(ctx); err == nil && (u > 0 || fr > 0) {
			used, free = max(used, u), fr
		}
	}
	out.Blocks = (used + free) / bsize
	out.Bfree = free / bsize
	out.Bavail = free / bsize
	// Inodes are not a fixed pool: report what is used and a large free count.
	out.Files = uint64(max(st.Inodes, 0)) + 1<<32
	out.Ffree = 1 << 32
	return fuse.OK
}
