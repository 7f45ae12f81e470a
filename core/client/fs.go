package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"path"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// FS is the file-system face of the client: paths and files on metad, data on
// storaged. Metadata calls go to any metad and fail over to the next on an
// unavailable one, reusing the request id, so a retried create or rename
// gets the first attempt's result.
type FS struct {
	meta     atomic.Pointer[[]metaapi.Client]
	rc       *rpc.Client
	chunks   *ChunkIO
	routing  routing.Source
	clientID uint64
	cache    *inodeCache
	// MetaRetry bounds how long a metadata call keeps trying while no metad
	// answers (a restart, a failover); the caller's deadline can cut it short.
	MetaRetry time.Duration
	closers   []func()
}

// DefaultInodeTTL is how long a path lookup is trusted: changes made by other
// clients show up within it.
const DefaultInodeTTL = time.Second

// SetInodeTTL sets how long path lookups are cached (0 turns the cache off).
func (fs *FS) SetInodeTTL(d time.Duration) { fs.cache = newInodeCache(d, 1<<20) }

// NewFS returns an FS over the metad addresses, routing and an rpc client.
func NewFS(src routing.Source, rc *rpc.Client, metadAddrs []string, chunks *ChunkIO) *FS {
	fs := &FS{rc: rc, chunks: chunks, routing: src, clientID: chunks.clientID,
		cache: newInodeCache(DefaultInodeTTL, 1<<20), MetaRetry: 10 * time.Second}
	fs.setMetad(metadAddrs)
	return fs
}

// setMetad replaces the metad addresses calls go to.
func (fs *FS) setMetad(addrs []string) {
	list := make([]metaapi.Client, 0, len(addrs))
	for _, a := range addrs {
		list = append(list, metaapi.Client{RPC: fs.rc, Addr: a})
	}
	fs.meta.Store(&list)
}

// MetadAddrs returns the metad addresses in use.
func (fs *FS) MetadAddrs() []string {
	var out []string
	for _, m := range *fs.meta.Load() {
		out = append(out, m.Addr)
	}
	return out
}

// ClientID is the id this client's write sessions are held under.
func (fs *FS) ClientID() uint64 { return fs.clientID }

// Close stops what Dial started (registration, routing updates, connections).
// An FS built with NewFS has nothing to stop.
func (fs *FS) Close() error {
	for i := len(fs.closers) - 1; i >= 0; i-- {
		fs.closers[i]()
	}
	fs.closers = nil
	return nil
}

// PathError wraps an errno with the operation and path, like os.PathError.
type PathError = fsPathError

type fsPathError struct {
	Op, Path string
	Err      error
}

func (e *fsPathError) Error() string { return e.Op + " " + e.Path + ": " + e.Err.Error() }
func (e *fsPathError) Unwrap() error { return e.Err }

func pathErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	if e := metaapi.Errno(err); e != 0 {
		err = e
	}
	return &fsPathError{Op: op, Path: p, Err: err}
}

// callMeta runs op against each metad in turn while they are unavailable,
// sweeping again with growing pauses for up to MetaRetry (or until ctx ends).
// Mutations carry one request id across all attempts, so a retry of a call
// that did land gets the first attempt's result.
func callMeta[T any](ctx context.Context, fs *FS, op func(m metaapi.Client) (T, error)) (T, error) {
	var zero T
	var last error
	start := time.Now()
	pause := 20 * time.Millisecond
	for {
		list := *fs.meta.Load()
		for _, m := range list {
			v, err := op(m)
			if err == nil || !metaUnavailable(err) {
				return v, err
			}
			last = err
			if ctx.Err() != nil {
				return zero, err
			}
		}
		if len(list) == 0 {
			last = errors.New("client: no metad known")
		}
		if time.Since(start)+pause > fs.MetaRetry {
			return zero, fmt.Errorf("%w (no metad answered for %v)", last, fs.MetaRetry)
		}
		select {
		case <-ctx.Done():
			return zero, fmt.Errorf("%w (last error: %w)", ctx.Err(), last)
		case <-time.After(pause):
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// metaUnavailable: the call did not reach a working metad (another may
// answer, or this one after a restart).
func metaUnavailable(err error) bool {
	switch rpc.CodeOf(err) {
	case rpc.Unavailable, rpc.Aborted:
		return true
	}
	return false
}

func newReqID() metaapi.RequestID {
	var r metaapi.RequestID
	rand.Read(r[:])
	return r
}

// resolve looks a path up, through the inode cache.
func (fs *FS) resolve(ctx context.Context, p string) (metaapi.Inode, error) {
	p = path.Clean("/" + p)
	if in, ok := fs.cache.get(p); ok {
		return in, nil
	}
	return fs.resolveFresh(ctx, p)
}

// resolveFresh asks metad, and caches the answer.
func (fs *FS) resolveFresh(ctx context.Context, p string) (metaapi.Inode, error) {
	p = path.Clean("/" + p)
	r, err := callMeta(ctx, fs, func(m metaapi.Client) (*metaapi.InodeResp, error) {
		return m.Resolve(ctx, &metaapi.ResolveReq{Path: p, FollowLast: true})
	})
	if err != nil {
		return metaapi.Inode{}, err
	}
	fs.cache.put(p, r.Inode)
	return r.Inode, nil
}

// Stat returns the inode at a path.
func (fs *FS) Stat(ctx context.Context, p string) (metaapi.Inode, error) {
	in, err := fs.resolve(ctx, p)
	return in, pathErr("stat", p, err)
}

// Mkdir creates a directory.
func (fs *FS) Mkdir(ctx context.Context, p string, mode uint32) error {
	dir, name := path.Split(path.Clean(p))
	parent, err := fs.resolve(ctx, dir)
	if err != nil {
		return pathErr("mkdir", p, err)
	}
	id := newReqID()
	r, err := callMeta(ctx, fs, func(m metaapi.Client) (*metaapi.InodeResp, error) {
		return m.Mkdir(ctx, &metaapi.MkdirReq{ReqID: id, Parent: parent.ID, Name: name, Mode: mode})
	})
	fs.cache.forget(path.Clean("/" + p))
	if err == nil {
		fs.cache.put(path.Clean("/"+p), r.Inode) // as a kernel fills its dentry cache
	}
	return pathErr("mkdir", p, err)
}

// ReadDir lists a directory, every page.
func (fs *FS) ReadDir(ctx context.Context, p string) ([]metaapi.DirEntry, error) {
	dir, err := fs.resolve(ctx, p)
	if err != nil {
		return nil, pathErr("readdir", p, err)
	}
	var out []metaapi.DirEntry
	after := ""
	for {
		page, err := callMeta(ctx, fs, func(m metaapi.Client) (*metaapi.ReadDirResp, error) {
			return m.ReadDir(ctx, &metaapi.ReadDirReq{Dir: dir.ID, After: after, Limit: 1024})
		})
		if err != nil {
			return nil, pathErr("readdir", p, err)
		}
		out = append(out, page.Entries...)
		if !page.More || len(page.Entries) == 0 {
			return out, nil
		}
		after = page.Entries[len(page.Entries)-1].Name
	}
}

// Rename moves from to to (replacing a file at to).
func (fs *FS) Rename(ctx context.Context, from, to string) error {
	fd, fn := path.Split(path.Clean(from))
	td, tn := path.Split(path.Clean(to))
	src, err := fs.resolve(ctx, fd)
	if err != nil {
		return pathErr("rename", from, err)
	}
	dst, err := fs.resolve(ctx, td)
	if err != nil {
		return pathErr("rename", to, err)
	}
	id := newReqID()
	_, err = callMeta(ctx, fs, func(m metaapi.Client) (struct{}, error) {
		return struct{}{}, m.Rename(ctx, &metaapi.RenameReq{ReqID: id, SrcParent: src.ID, SrcName: fn, DstParent: dst.ID, DstName: tn})
	})
	fs.cache.forget(path.Clean("/" + from))
	fs.cache.forget(path.Clean("/" + to))
	return pathErr("rename", from, err)
}

// Remove removes a file or an empty directory.
func (fs *FS) Remove(ctx context.Context, p string) error {
	dir, name := path.Split(path.Clean(p))
	parent, err := fs.resolve(ctx, dir)
	if err != nil {
		return pathErr("remove", p, err)
	}
	in, err := fs.resolve(ctx, p)
	if err != nil {
		return pathErr("remove", p, err)
	}
	id := newReqID()
	_, err = callMeta(ctx, fs, func(m metaapi.Client) (struct{}, error) {
		req := &metaapi.RemoveReq{ReqID: id, Parent: parent.ID, Name: name}
		if in.Type == metaapi.TypeDir {
			return struct{}{}, m.Rmdir(ctx, req)
		}
		return struct{}{}, m.Unlink(ctx, req)
	})
	fs.cache.forget(path.Clean("/" + p))
	return pathErr("remove", p, err)
}

// File is an open file. ReadAt and WriteAt may be called concurrently.
type File struct {
	fs      *FS
	path    string
	inode   metaapi.Inode
	session []byte // non-nil for a write open
	chains  []routing.ChainID
	mu      sync.Mutex
	end     uint64 // the largest offset written through this handle
	wrote   bool   // data written since the last length report
	// reported is when the length was last reported (writers report every
	// ReportEvery, so other clients see a growing file grow).
	reported  time.Time
	reporting bool
}

// ReportEvery is how often a writer reports its length to metad while it
// writes (and at fsync and close).
const ReportEvery = 3 * time.Second

// Create creates (or truncates) a file and opens it for writing.
func (fs *FS) Create(ctx context.Context, p string, mode uint32) (*File, error) {
	dir, name := path.Split(path.Clean(p))
	parent, err := fs.resolve(ctx, dir)
	if err != nil {
		return nil, pathErr("create", p, err)
	}
	id := newReqID()
	r, err := callMeta(ctx, fs, func(m metaapi.Client) (*metaapi.CreateResp, error) {
		return m.Create(ctx, &metaapi.CreateReq{ReqID: id, Parent: parent.ID, Name: name, Mode: mode, Truncate: true, Write: true, Client: fs.clientID})
	})
	fs.cache.forget(path.Clean("/" + p))
	if err != nil {
		return nil, pathErr("create", p, err)
	}
	fs.cache.put(path.Clean("/"+p), r.Inode)
	return fs.file(p, r.Inode, r.Session)
}

// Open opens a file for reading. It always asks metad (close-to-open: a file
// opened after another client closed it sees all of its data and length).
func (fs *FS) Open(ctx context.Context, p string) (*File, error) {
	in, err := fs.resolveFresh(ctx, p)
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	if in.Type == metaapi.TypeDir {
		return nil, pathErr("open", p, syscall.EISDIR)
	}
	return fs.file(p, in, nil)
}

func (fs *FS) file(p string, in metaapi.Inode, session []byte) (*File, error) {
	f := &File{fs: fs, path: p, inode: in, session: session, reported: time.Now()}
	l := in.Layout
	chains, ok := fs.routing.Current().Table(l.TableID, l.TableVersion)
	if !ok {
		return nil, pathErr("open", p, fmt.Errorf("chain table %d version %d is not in routing", l.TableID, l.TableVersion))
	}
	t := layout.ChainTable{ID: l.TableID, Version: l.TableVersion, Chains: chains}
	var err error
	if f.chains, err = l.Chains(t); err != nil {
		return nil, pathErr("open", p, err)
	}
	return f, nil
}

// Inode is the file's inode as of open.
func (f *File) Inode() metaapi.Inode { return f.inode }

// Size is the file's length as this handle knows it.
func (f *File) Size() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(f.inode.Length, f.end)
}

// forPieces runs fn on every per-chunk piece of [off, off+n), as many at a
// time as the FS's in-flight window allows, and returns the first error.
func (f *File) forPieces(ctx context.Context, off, n uint64, fn func(context.Context, layout.Piece, routing.ChainID) error) error {
	pieces, err := f.inode.Layout.Split(off, n)
	if err != nil {
		return err
	}
	return runBounded(ctx, f.fs.chunks.Window(), len(pieces), func(ctx context.Context, i int) error {
		pc := pieces[i]
		return fn(ctx, pc, f.chains[pc.ChunkIndex%uint64(len(f.chains))])
	})
}

// WriteAtContext writes p at off.
func (f *File) WriteAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if f.session == nil {
		return 0, pathErr("write", f.path, syscall.EBADF)
	}
	if off < 0 {
		return 0, pathErr("write", f.path, syscall.EINVAL)
	}
	if uint64(off)+uint64(len(p)) > metaapi.MaxFileSize {
		return 0, pathErr("write", f.path, syscall.EFBIG)
	}
	if err := f.ensureHint(ctx, uint64(off)+uint64(len(p))); err != nil {
		return 0, pathErr("write", f.path, err)
	}
	l := f.inode.Layout
	err := f.forPieces(ctx, uint64(off), uint64(len(p)), func(ctx context.Context, pc layout.Piece, chain routing.ChainID) error {
		data := p[pc.OffsetInBuffer : pc.OffsetInBuffer+uint64(pc.Length)]
		_, err := f.fs.chunks.Write(ctx, chain, l.ChunkID(f.inode.ID, uint64(off)+pc.OffsetInBuffer), pc.OffsetInChunk, data, l.ChunkSize)
		return err
	})
	if err != nil {
		return 0, pathErr("write", f.path, err)
	}
	f.mu.Lock()
	f.end = max(f.end, uint64(off)+uint64(len(p)))
	f.wrote = true
	due := !f.reporting && time.Since(f.reported) >= ReportEvery
	if due {
		f.reporting = true
	}
	f.mu.Unlock()
	if due {
		go f.reportInBackground()
	}
	return len(p), nil
}

// WriteAt implements io.WriterAt.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	return f.WriteAtContext(context.Background(), p, off)
}

// ReadAtContext reads into p at off, up to the file's length; holes read as
// zeros.
func (f *File) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, pathErr("read", f.path, syscall.EINVAL)
	}
	size := f.Size()
	if uint64(off) >= size {
		return 0, io.EOF
	}
	n := min(uint64(len(p)), size-uint64(off))
	jobs, err := f.readJobsFor(p[:n], uint64(off))
	if err == nil {
		err = f.readJobs(ctx, jobs)
	}
	if err != nil {
		return 0, pathErr("read", f.path, err)
	}
	if n < uint64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// ReadAt implements io.ReaderAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	return f.ReadAtContext(context.Background(), p, off)
}

// CloseContext ends a write open, reporting the length written.
func (f *File) CloseContext(ctx context.Context) error {
	if f.session == nil {
		return nil
	}
	f.mu.Lock()
	end, wrote, tv := f.end, f.wrote, f.inode.TruncateVer
	f.mu.Unlock()
	r, err := callMetaFor(ctx, f.fs, f.inode.ID, func(m metaapi.Client) (*metaapi.InodeResp, error) {
		return m.Close(ctx, &metaapi.CloseReq{Session: f.session, TruncateVer: tv, Length: end, Wrote: wrote})
	})
	if err != nil {
		return pathErr("close", f.path, err)
	}
	f.mu.Lock()
	f.inode, f.session, f.wrote = r.Inode, nil, false
	f.mu.Unlock()
	f.fs.cache.put(path.Clean("/"+f.path), r.Inode) // with its settled length
	return nil
}

// Close implements io.Closer.
func (f *File) Close() error { return f.CloseContext(context.Background()) }

var (
	_ io.ReaderAt = (*File)(nil)
	_ io.WriterAt = (*File)(nil)
)
