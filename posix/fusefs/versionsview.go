package fusefs

import (
	"context"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// The old versions of a versioned bucket's files, read-only through the
// mount: in a directory of such a bucket, the hidden name
//
//	.flyfs-versions/<name>/<versionId>
//
// is the noncurrent version versionId of the file <name> (delete markers
// are not shown). Listings of the directory do not show .flyfs-versions;
// listing it shows the names that have noncurrent versions, and each of
// those its version ids. Nothing there can be written, made or removed.
//
// Node ids: virtBit|versBit|seq, the nodes held in a table by what they
// stand for, so a second lookup finds the same id. The table is bounded:
// when full it starts over, and ids of the old one answer ESTALE (the
// kernel looks the path up again).
const (
	// VersionsDirName is the hidden name of the view in each directory.
	VersionsDirName = ".flyfs-versions"
	versBit         = 1 << 61
	maxVersNodes    = 1 << 16
)

func isVersNode(id uint64) bool { return id&(virtBit|versBit) == virtBit|versBit }

type versKind uint8

const (
	versRoot versKind = iota + 1 // <dir>/.flyfs-versions
	versKey                      // <dir>/.flyfs-versions/<name>
	versFile                     // <dir>/.flyfs-versions/<name>/<id>
)

// versNode is what a node of the view stands for.
type versNode struct {
	kind   versKind
	dir    uint64 // the real directory
	bucket uint64
	key    string // versRoot: the directory's key prefix; else the file's key
	id     string // versFile: the version id
	ino    uint64 // versFile: the version's inode
}

type versTable struct {
	mu    sync.Mutex
	next  uint64
	nodes map[uint64]versNode
	ids   map[versNode]uint64
}

func (t *versTable) idOf(n versNode) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.ids[n]; ok {
		return id
	}
	if t.nodes == nil || len(t.nodes) >= maxVersNodes {
		t.nodes, t.ids = map[uint64]versNode{}, map[versNode]uint64{}
	}
	t.next++
	id := virtBit | versBit | t.next%versBit
	t.nodes[id], t.ids[n] = n, id
	return id
}

func (t *versTable) node(id uint64) (versNode, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.nodes[id]
	return n, ok
}

func versDirAttr(id uint64, a *fuse.Attr) {
	*a = fuse.Attr{Ino: id, Mode: syscall.S_IFDIR | 0o555, Nlink: 2, Size: 4096, Blksize: 4096}
	a.SetTimes(&mountTime, &mountTime, &mountTime)
}

// versAttr fills a version file's attributes: the inode's, read-only.
func (f *fileSystem) versAttr(id uint64, in metaapi.Inode, a *fuse.Attr) {
	f.fillAttr(in, a)
	a.Ino, a.Nlink = id, 1
	a.Mode &^= 0o222
}

// versLookup answers lookups in the view, and of .flyfs-versions in a
// directory of a versioned bucket; ok is false for everything else.
func (f *fileSystem) versLookup(ctx context.Context, parent uint64, name string, out *fuse.EntryOut) (fuse.Status, bool) {
	if !isVersNode(parent) {
		if name != VersionsDirName || isVirt(parent) {
			return fuse.OK, false
		}
		sc, err := f.meta.VersionScope(ctx, parent)
		if err != nil || sc.Bucket == 0 {
			return fuse.OK, false // not a versioned bucket's: an ordinary name
		}
		id := f.vers.idOf(versNode{kind: versRoot, dir: parent, bucket: sc.Bucket, key: sc.DirKey})
		*out = fuse.EntryOut{NodeId: id, Generation: 1}
		versDirAttr(id, &out.Attr)
		return fuse.OK, true
	}
	p, ok := f.vers.node(parent)
	if !ok {
		return fuse.Status(syscall.ESTALE), true
	}
	switch p.kind {
	case versRoot:
		key := p.key + name
		ids, err := f.versionIDs(ctx, p.bucket, key)
		if err != nil {
			return f.status(ctx, "lookup", err), true
		}
		if len(ids) == 0 {
			return fuse.ENOENT, true
		}
		id := f.vers.idOf(versNode{kind: versKey, dir: p.dir, bucket: p.bucket, key: key})
		*out = fuse.EntryOut{NodeId: id, Generation: 1}
		versDirAttr(id, &out.Attr)
		return fuse.OK, true
	case versKey:
		e, err := f.meta.GetVersion(ctx, p.bucket, p.key, name)
		if err != nil {
			return f.status(ctx, "lookup", err), true
		}
		if e.DeleteMarker || e.Inode == nil {
			return fuse.ENOENT, true
		}
		id := f.vers.idOf(versNode{kind: versFile, dir: p.dir, bucket: p.bucket, key: p.key, id: name, ino: e.Inode.ID})
		*out = fuse.EntryOut{NodeId: id, Generation: 1}
		f.versAttr(id, *e.Inode, &out.Attr)
		return fuse.OK, true
	}
	return fuse.ENOTDIR, true
}

// versionIDs lists the object versions (not markers) of key, newest first.
func (f *fileSystem) versionIDs(ctx context.Context, bucket uint64, key string) ([]metaapi.VersionEntry, error) {
	var ids []metaapi.VersionEntry
	req := metaapi.ListVersionsReq{Bucket: bucket, Prefix: key, Limit: metaapi.MaxListVersions}
	for {
		res, err := f.meta.ListVersions(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, e := range res.Entries {
			if e.Key != key {
				return ids, nil // the keys after it ("key2")
			}
			if !e.DeleteMarker && !e.Prefix && e.Inode != nil {
				ids = append(ids, e)
			}
		}
		if !res.More || len(res.Entries) == 0 {
			return ids, nil
		}
		last := res.Entries[len(res.Entries)-1]
		req.AfterKey, req.AfterSeq = last.Key, last.Seq
	}
}

// versEntries lists a view directory.
func (f *fileSystem) versEntries(ctx context.Context, n versNode) ([]metaapi.DirEntry, error) {
	switch n.kind {
	case versKey:
		vs, err := f.versionIDs(ctx, n.bucket, n.key)
		out := make([]metaapi.DirEntry, 0, len(vs))
		for _, v := range vs {
			id := f.vers.idOf(versNode{kind: versFile, dir: n.dir, bucket: n.bucket, key: n.key, id: v.ID, ino: v.Inode.ID})
			out = append(out, metaapi.DirEntry{Name: v.ID, Ino: id, Type: metaapi.TypeFile})
		}
		return out, err
	case versRoot:
		var out []metaapi.DirEntry
		req := metaapi.ListVersionsReq{Bucket: n.bucket, Prefix: n.key, Delimiter: "/", Limit: metaapi.MaxListVersions}
		for {
			res, err := f.meta.ListVersions(ctx, req)
			if err != nil {
				return nil, err
			}
			for _, e := range res.Entries {
				name := strings.TrimPrefix(e.Key, n.key)
				if e.Prefix || e.DeleteMarker || name == "" {
					continue
				}
				if len(out) == 0 || out[len(out)-1].Name != name {
					id := f.vers.idOf(versNode{kind: versKey, dir: n.dir, bucket: n.bucket, key: e.Key})
					out = append(out, metaapi.DirEntry{Name: name, Ino: id, Type: metaapi.TypeDir})
				}
			}
			if !res.More || len(res.Entries) == 0 {
				return out, nil
			}
			last := res.Entries[len(res.Entries)-1]
			req.AfterKey, req.AfterSeq = last.Key, last.Seq
			if last.Prefix {
				req.AfterSeq = 0
			}
		}
	}
	return nil, syscall.ENOTDIR
}

func (f *fileSystem) versGetAttr(ctx context.Context, id uint64, out *fuse.AttrOut) fuse.Status {
	n, ok := f.vers.node(id)
	if !ok {
		return fuse.Status(syscall.ESTALE)
	}
	if n.kind != versFile {
		versDirAttr(id, &out.Attr)
		return fuse.OK
	}
	in, err := f.meta.Stat(ctx, n.ino)
	if err != nil {
		return f.status(ctx, "getattr", err)
	}
	f.versAttr(id, in, &out.Attr)
	return fuse.OK
}

// versOpen opens a version file for reading (EROFS for writing).
func (f *fileSystem) versOpen(ctx context.Context, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	n, ok := f.vers.node(in.NodeId)
	switch {
	case !ok:
		return fuse.Status(syscall.ESTALE)
	case n.kind != versFile:
		return fuse.EISDIR
	case isWrite(in.Flags) || in.Flags&syscall.O_TRUNC != 0:
		return fuse.EROFS
	}
	ino, err := f.meta.Stat(ctx, n.ino)
	if err != nil {
		return f.status(ctx, "open", err)
	}
	file, err := f.fs.OpenInode(ctx, ino, nil)
	if err != nil {
		return f.status(ctx, "open", err)
	}
	h := f.addHandle(ino, file, false, in.Flags, creds(&in.InHeader))
	out.Fh = h.id
	out.OpenFlags |= fuse.FOPEN_KEEP_CACHE // a noncurrent version never changes
	return fuse.OK
}

// inVersionedBucket reports whether dir is a directory of a bucket with a
// versioning state (where the name .flyfs-versions is the view's).
func (f *fileSystem) inVersionedBucket(dir uint64) bool {
	ctx, cancel := context.WithTimeout(f.base, f.opts.OpTimeout)
	defer cancel()
	sc, err := f.meta.VersionScope(ctx, dir)
	return err == nil && sc.Bucket != 0
}
