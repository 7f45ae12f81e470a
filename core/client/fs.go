package client

import (
	"context"
	"fmt"
	"os"
	"path"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/api/mgmtdapi"
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
	inlines  inlineCopies
	keys     *Keys
	mgmtd    *Mgmtd // nil when routing does not come from mgmtd
	// MetaRetry bounds how long a metadata call keeps trying while no metad
	// answers (a restart, a failover); the caller's deadline can cut it short.
	MetaRetry time.Duration
	closers   []func()
	metrics   *fsMetrics                 // nil unless dialed with Config.Registerer
	blocks    atomic.Pointer[blockCache] // nil unless SetMemoryCache
	locks     lockSession
	inlineMax int // the largest file held for an inline close (inline.go)
}

// DefaultInodeTTL is how long a path lookup is trusted: changes made by other
// clients show up within it.
const DefaultInodeTTL = time.Second

// CacheConfig sizes the client's cache of file data, read by read-only
// opens in CacheBlock blocks keyed by inode and Gen. The zero value is no
// cache.
type CacheConfig struct {
	Memory   int64         // bytes of the memory tier (0: none)
	Dir      string        // directory of the disk tier ("": none), kept across remounts
	DiskSize int64         // bytes of the disk tier
	TTL      time.Duration // a block older than this is fetched again (0: no limit)
}

// SetCache replaces the client's cache (closing the one before). A disk
// tier is for this cluster only (its id, from mgmtd, is recorded in the
// directory) and for one client at a time.
func (fs *FS) SetCache(ctx context.Context, cfg CacheConfig) error {
	var c *blockCache
	if cfg.Memory > 0 || cfg.Dir != "" {
		c = newBlockCache(max(cfg.Memory, 0))
		c.ttl = cfg.TTL
	}
	if cfg.Dir != "" {
		if cfg.DiskSize <= 0 {
			return fmt.Errorf("a disk cache needs a size")
		}
		if fs.mgmtd == nil {
			return fmt.Errorf("a disk cache needs the cluster manager (for the cluster id)")
		}
		p, err := fs.mgmtd.GetPrimary(ctx)
		if err != nil {
			return fmt.Errorf("disk cache: the cluster id: %w", err)
		}
		if p.ClusterID == "" {
			return fmt.Errorf("disk cache: mgmtd gave no cluster id")
		}
		d, err := openDiskTier(cfg.Dir, cfg.DiskSize, p.ClusterID)
		if err != nil {
			return err
		}
		d.ttl = cfg.TTL
		c.withDisk(d)
	}
	if old := fs.blocks.Swap(c); old != nil {
		old.close()
	}
	return nil
}

// SetMemoryCache gives the client a memory cache of up to bytes (0: none).
func (fs *FS) SetMemoryCache(bytes int64) {
	fs.SetCache(context.Background(), CacheConfig{Memory: bytes}) // no disk tier: cannot fail
}

// cacheReport is the cache's counters for mgmtd's registry (the console's
// client view); nil without a cache.
func (fs *FS) cacheReport() *mgmtdapi.CacheReport {
	c := fs.blocks.Load()
	if c == nil {
		return nil
	}
	s := c.stats()
	tier := func(t TierStats) mgmtdapi.CacheTier {
		return mgmtdapi.CacheTier{Capacity: t.Capacity, Used: t.Used, Hits: t.Hits, Misses: t.Misses, Evictions: t.Evictions, Corrupt: t.Corrupt}
	}
	return &mgmtdapi.CacheReport{Memory: tier(s.Memory), Disk: tier(s.Disk)}
}

// SyncCache waits until the blocks fetched so far are in the disk tier
// (written, or skipped when its writer was behind).
func (fs *FS) SyncCache() {
	if c := fs.blocks.Load(); c != nil {
		c.drain()
	}
}

// CacheStats reports the cache tiers' counters (zero for a tier not set).
func (fs *FS) CacheStats() CacheStats {
	if c := fs.blocks.Load(); c != nil {
		return c.stats()
	}
	return CacheStats{}
}

// changing tells the cache that this client is changing ino's data; done
// tells it the change is over (landed, failed or maybe landed).
func (fs *FS) changing(ino uint64) (done func()) {
	if c := fs.blocks.Load(); c != nil {
		return c.change(ino)
	}
	return func() {}
}

// SetInodeTTL sets how long path lookups are cached (0 turns the cache off).
func (fs *FS) SetInodeTTL(d time.Duration) { fs.cache = newInodeCache(d, 1<<20) }

// NewFS returns an FS over the metad addresses, routing and an rpc client.
func NewFS(src routing.Source, rc *rpc.Client, metadAddrs []string, chunks *ChunkIO) *FS {
	fs := &FS{rc: rc, chunks: chunks, routing: src, clientID: chunks.clientID,
		cache: newInodeCache(DefaultInodeTTL, 1<<20), MetaRetry: 10 * time.Second, inlineMax: DefaultInlineMax}
	fs.keys = &Keys{fs: fs, cache: map[string]cachedKey{}}
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

// Chunks is the FS's chunk I/O: its window, hedging policy and counters
// (IOStats) are shared by every file of the FS.
func (fs *FS) Chunks() *ChunkIO { return fs.chunks }

// Close stops what Dial started (registration, routing updates, connections).
// An FS built with NewFS has nothing to stop.
func (fs *FS) Close() error {
	fs.endLocks()
	if c := fs.blocks.Swap(nil); c != nil {
		c.close()
	}
	for i := len(fs.closers) - 1; i >= 0; i-- {
		fs.closers[i]()
	}
	fs.closers = nil
	return nil
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

// MkdirAll creates a directory and its missing parents in one transaction.
func (fs *FS) MkdirAll(ctx context.Context, p string, mode uint32) error {
	_, err := fs.Meta().MkdirAll(ctx, path.Clean("/"+p), mode, Creds{}, false)
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
		_, err := m.Rename(ctx, &metaapi.RenameReq{ReqID: id, SrcParent: src.ID, SrcName: fn, DstParent: dst.ID, DstName: tn})
		return struct{}{}, err
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
		_, err := m.Unlink(ctx, req)
		return struct{}{}, err
	})
	fs.cache.forget(path.Clean("/" + p))
	return pathErr("remove", p, err)
}

// RemoveAll removes a whole tree in one call (a missing path is not an error).
func (fs *FS) RemoveAll(ctx context.Context, p string) error {
	dir, name := path.Split(path.Clean("/" + p))
	parent, err := fs.resolveFresh(ctx, dir)
	if err == nil {
		err = fs.Meta().RemoveAll(ctx, parent.ID, name)
	}
	fs.cache.forget(path.Clean("/" + p))
	if Errno(err) == syscall.ENOENT {
		return nil
	}
	return pathErr("remove", p, err)
}

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
	return fs.file(ctx, p, r.Inode, r.Session)
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
	return fs.file(ctx, p, in, nil)
}

// OpenFile opens a path with open(2) flags (O_CREATE, O_EXCL, O_TRUNC,
// O_WRONLY/O_RDWR) and permission bits for a new file.
func (fs *FS) OpenFile(ctx context.Context, p string, flags int, mode uint32) (*File, error) {
	if flags&os.O_CREATE == 0 {
		in, err := fs.resolveFresh(ctx, p)
		if err != nil {
			return nil, pathErr("open", p, err)
		}
		if in.Type == metaapi.TypeDir {
			return nil, pathErr("open", p, syscall.EISDIR)
		}
		var session []byte
		if writeFlags(flags) || flags&os.O_TRUNC != 0 {
			if in, session, err = fs.Meta().Open(ctx, in.ID, flags, Creds{}); err != nil {
				return nil, pathErr("open", p, err)
			}
			fs.cache.forget(path.Clean("/" + p))
		}
		return fs.file(ctx, p, in, session)
	}
	dir, name := path.Split(path.Clean("/" + p))
	parent, err := fs.resolve(ctx, dir)
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	in, session, _, err := fs.Meta().Create(ctx, parent.ID, name, mode, flags, Creds{})
	fs.cache.forget(path.Clean("/" + p))
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	return fs.file(ctx, p, in, session)
}
