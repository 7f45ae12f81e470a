package ns

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/flyfs/flyfs/core/kv"
)

// Report is the outcome of Check. Problems is empty for a consistent namespace.
type Report struct {
	Inodes, Dirs, Files, Symlinks, Specials int
	Dentries, GCQueued, Sessions            int
	Problems                                []string
}

// Clean reports whether Check found nothing wrong.
func (r *Report) Clean() bool { return len(r.Problems) == 0 }

func (r *Report) String() string {
	s := fmt.Sprintf("%d inodes (%d dirs, %d files, %d symlinks, %d special files), %d dentries, %d queued for GC, %d sessions",
		r.Inodes, r.Dirs, r.Files, r.Symlinks, r.Specials, r.Dentries, r.GCQueued, r.Sessions)
	if r.Clean() {
		return s + ": clean"
	}
	return s + fmt.Sprintf(": %d problems:\n  ", len(r.Problems)) + strings.Join(r.Problems, "\n  ")
}

const maxProblems = 1000

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

type fsckDentry struct {
	parent uint64
	name   string
	d      Dentry
}

// fsckState is everything the namespace stores, read at one version.
type fsckState struct {
	inodes     map[uint64]*Inode
	dentries   []fsckDentry
	gc         map[uint64]gcKind
	sessions   map[uint64]int
	xattrs     map[uint64]bool
	inline     map[uint64]int    // the length of each INLN value
	locks      map[uint64]bool   // inodes with lock tables
	aclBits    map[uint64]uint32 // the mode bits each access ACL stands for
	dirTimes   map[uint64]bool
	subdirs    map[uint64]*[subdirShards]int64 // the count shards of each directory
	alloc      [allocShards]uint64
	stats      FSStats
	versioning map[uint64]Versioning // buckets' states
	versions   []fsckVersion
	layers     map[uint64]*layerRecord // layer records by id
	snapshots  []SnapshotInfo
	gcLayers   map[uint64]bool // layers whose chunks are queued for deletion
	bad        []string        // undecodable or unknown keys
}

type fsckVersion struct {
	bucket uint64
	key    string
	Version
}

// Check reads the whole namespace in one read-only transaction and checks its
// invariants (see doc.go):
//   - every dentry's parent is a directory and its child exists with the
//     dentry's type;
//   - a file's, symlink's or special file's nlink equals the number of
//     dentries naming it; a file with none is queued for GC or has write
//     sessions (symlinks and special files never linger, and hold no data);
//   - a live directory has exactly one dentry, matching its Parent and Name;
//     a removed one (nlink 0) has none and is queued; the root has none;
//   - a directory's subdirectory count (the nlink it reports) equals its
//     subdirectories, shard by shard (directories older than the count are
//     not checked);
//   - every inode is reachable from the root or from a queued directory, and
//     parent pointers lead to the root or a removed directory without cycles;
//   - GC entries, sessions, xattrs, lock tables and directory times belong
//     to inodes that exist (and GC entries to removed ones, sessions to
//     files);
//   - every inode id was handed out by the allocator, and the StatFS counters
//     equal the inode count and the sum of file lengths.
//
// One transaction is bounded by the KV's transaction time (5 s by default):
// fine for tests and small namespaces; huge ones need a paged, offline check.
func Check(ctx context.Context, db *kv.DB) (Report, error) {
	var st *fsckState
	err := db.RunRead(ctx, func(tx kv.ReadTxn) error {
		var err error
		st, err = loadFsck(ctx, tx)
		return err
	})
	if err != nil {
		return Report{}, fmt.Errorf("ns: fsck: %w", err)
	}
	var r Report
	st.check(&r)
	return r, nil
}

func loadFsck(ctx context.Context, tx kv.ReadTxn) (*fsckState, error) {
	st := &fsckState{inodes: map[uint64]*Inode{}, gc: map[uint64]gcKind{}, sessions: map[uint64]int{},
		xattrs: map[uint64]bool{}, inline: map[uint64]int{}, locks: map[uint64]bool{}, aclBits: map[uint64]uint32{}, dirTimes: map[uint64]bool{}, subdirs: map[uint64]*[subdirShards]int64{},
		versioning: map[uint64]Versioning{}, layers: map[uint64]*layerRecord{}, gcLayers: map[uint64]bool{}}
	bad := &st.bad
	id := func(k []byte, off int) uint64 { return binary.LittleEndian.Uint64(k[off : off+8]) }
	// Only our tags: the store may hold other services' keys.
	tags := [][]byte{tagInode, tagDentry, tagIdem, tagGC, tagAlloc, tagSession, tagXattr, tagInline, tagDirTime, keyStatBase, tagStatDelta, tagLock, tagLockSession, tagVersioning, tagVersion, tagTrash, tagLayer, tagSnapshot}
	visit := func(k, v []byte) error {
		if len(k) < 4 {
			*bad = append(*bad, fmt.Sprintf("short key %q", k))
			return nil
		}
		tag, rest := k[:4], k[4:]
		switch {
		case bytes.Equal(tag, tagInode) && len(rest) == 8:
			in := new(Inode)
			if err := decode(v, in); err != nil {
				*bad = append(*bad, fmt.Sprintf("inode %d: %v", id(k, 4), err))
				return nil
			}
			if in.ID != id(k, 4) {
				*bad = append(*bad, fmt.Sprintf("inode key %d holds inode %d", id(k, 4), in.ID))
			}
			st.inodes[id(k, 4)] = in
		case bytes.Equal(tag, tagDentry) && len(rest) > 8:
			var d Dentry
			if err := decode(v, &d); err != nil {
				*bad = append(*bad, fmt.Sprintf("dentry %d/%q: %v", id(k, 4), rest[8:], err))
				return nil
			}
			st.dentries = append(st.dentries, fsckDentry{parent: id(k, 4), name: string(rest[8:]), d: d})
		case bytes.Equal(tag, tagGC) && len(rest) == 18:
			var e gcEntry
			if err := decode(v, &e); err != nil {
				*bad = append(*bad, fmt.Sprintf("gc entry %x: %v", rest, err))
				return nil
			}
			ino := id(k, 14)
			// A claimed entry sits at its claim's due time, not its removal time.
			if e.Ino != ino || int(rest[1]) != int(ino%gcShards) ||
				(e.Claimed == 0 && int64(binary.BigEndian.Uint64(rest[2:10])) != e.RemovedAt) {
				*bad = append(*bad, fmt.Sprintf("gc entry %x does not match its value %+v", rest, e))
			}
			if e.Layer != nil {
				if st.gcLayers[ino] {
					*bad = append(*bad, fmt.Sprintf("layer %d queued for GC twice", ino))
				}
				st.gcLayers[ino] = true
				return nil
			}
			if _, dup := st.gc[ino]; dup {
				*bad = append(*bad, fmt.Sprintf("inode %d queued for GC twice", ino))
			}
			st.gc[ino] = gcKind(rest[0])
		case bytes.Equal(tag, tagSession) && len(rest) == 24:
			st.sessions[id(k, 4)]++
		case bytes.Equal(tag, tagXattr) && len(rest) > 8:
			st.xattrs[id(k, 4)] = true
			if string(rest[8:]) == xattrACLAccess {
				es, err := parseACL(v)
				if err != nil {
					*bad = append(*bad, fmt.Sprintf("access ACL of %d: %v", id(k, 4), err))
					return nil
				}
				st.aclBits[id(k, 4)] = aclModeBits(es)
			}
		case bytes.Equal(tag, tagInline) && len(rest) == 8:
			st.inline[id(k, 4)] = len(v)
		case bytes.Equal(tag, tagDirTime) && len(rest) == 8:
			st.dirTimes[id(k, 4)] = true
		case bytes.Equal(tag, tagDirTime) && len(rest) == 9 && rest[8] < subdirShards:
			var n int64
			if err := decode(v, &n); err != nil {
				*bad = append(*bad, fmt.Sprintf("subdirectory count %x: %v", rest, err))
				return nil
			}
			dir := id(k, 4)
			if st.subdirs[dir] == nil {
				st.subdirs[dir] = new([subdirShards]int64)
			}
			st.subdirs[dir][rest[8]] = n
			st.dirTimes[dir] = true
		case bytes.Equal(tag, tagAlloc) && len(rest) == 1 && int(rest[0]) < allocShards && len(v) == 8:
			st.alloc[rest[0]] = binary.LittleEndian.Uint64(v)
		case bytes.Equal(k, keyStatBase), bytes.Equal(tag, tagStatDelta) && len(rest) == 16:
			var d statDelta
			if err := decode(v, &d); err != nil {
				*bad = append(*bad, fmt.Sprintf("statfs key %x: %v", k, err))
				return nil
			}
			st.stats.Inodes += d.Inodes
			st.stats.Bytes += d.Bytes
		case bytes.Equal(tag, tagIdem) && len(rest) == 16:
		case bytes.Equal(tag, tagLock) && len(rest) == 9 && (LockClass(rest[8]) == LockPOSIX || LockClass(rest[8]) == LockFlock):
			var held []RangeLock
			if err := decode(v, &held); err != nil {
				*bad = append(*bad, fmt.Sprintf("lock table %x: %v", rest, err))
			}
			st.locks[id(k, 4)] = true
			for i, a := range held {
				for _, b := range held[i+1:] {
					if a.Holder == b.Holder && a.overlaps(b) {
						*bad = append(*bad, fmt.Sprintf("lock table %x: one holder's ranges overlap (%+v, %+v)", rest, a, b))
					}
				}
			}
		case bytes.Equal(tag, tagLockSession) && len(rest) > 0 && len(rest) <= maxLockClient:
			var s lockSession
			if err := decode(v, &s); err != nil {
				*bad = append(*bad, fmt.Sprintf("lock session %q: %v", rest, err))
			}
		case bytes.Equal(tag, tagVersioning) && len(rest) == 8:
			var state Versioning
			if err := decode(v, &state); err != nil || state > VersioningSuspended {
				*bad = append(*bad, fmt.Sprintf("versioning state of %d: %x", id(k, 4), v))
				return nil
			}
			st.versioning[id(k, 4)] = state
		case bytes.Equal(tag, tagTrash) && len(rest) == 16:
			var r trashRecord
			if err := decode(v, &r); err != nil || r.Ino != id(k, 12) {
				*bad = append(*bad, fmt.Sprintf("trash record %x: %v", rest, err))
			}
		case bytes.Equal(tag, tagSnapshot) && len(rest) > 8:
			var info SnapshotInfo
			if err := decode(v, &info); err != nil || info.Top != id(k, 4) || info.Name != string(rest[8:]) {
				*bad = append(*bad, fmt.Sprintf("snapshot record %q: %v", rest[8:], err))
				return nil
			}
			st.snapshots = append(st.snapshots, info)
		case bytes.Equal(tag, tagLayer) && len(rest) == 8:
			rec := new(layerRecord)
			if err := decode(v, rec); err != nil {
				*bad = append(*bad, fmt.Sprintf("layer %d: %v", id(k, 4), err))
				return nil
			}
			st.layers[id(k, 4)] = rec
		case bytes.Equal(tag, tagVersion) && len(rest) > 17:
			key, _, ok := parseVersionKey(id(k, 4), k)
			var ver Version
			if err := decode(v, &ver); !ok || err != nil || ver.ID == "" {
				*bad = append(*bad, fmt.Sprintf("version record %q: %v", k, err))
				return nil
			}
			st.versions = append(st.versions, fsckVersion{bucket: id(k, 4), key: key, Version: ver})
		default:
			*bad = append(*bad, fmt.Sprintf("malformed key %q", k))
		}
		return nil
	}
	for _, tag := range tags {
		if err := scan(ctx, tx, tag, prefixEnd(tag), visit); err != nil {
			return nil, err
		}
	}
	return st, nil
}

func (st *fsckState) check(r *Report) {
	for _, b := range st.bad {
		r.problem("%s", b)
	}
	r.Inodes, r.Dentries, r.GCQueued = len(st.inodes), len(st.dentries), len(st.gc)
	for _, c := range st.sessions {
		r.Sessions += c
	}

	root, ok := st.inodes[RootID]
	switch {
	case !ok:
		r.problem("root inode %d missing", RootID)
	case root.Type != TypeDir || root.Parent != RootID || root.Nlink != 1:
		r.problem("root inode malformed: %+v", *root)
	}

	links := map[uint64]int{}
	versionRefs := st.checkVersions(r)
	dirDentry := map[uint64][]fsckDentry{}
	children := map[uint64][]uint64{}
	subdirs := map[uint64]*[subdirShards]int64{} // counted from the dentries
	for _, e := range st.dentries {
		p, ok := st.inodes[e.parent]
		if !ok {
			r.problem("dentry %d/%q: parent missing", e.parent, e.name)
		} else if p.Type != TypeDir {
			r.problem("dentry %d/%q: parent is a %s", e.parent, e.name, p.Type)
		}
		if checkName(e.name) != nil {
			r.problem("dentry %d/%q: bad name", e.parent, e.name)
		}
		c, ok := st.inodes[e.d.Ino]
		if !ok {
			r.problem("dentry %d/%q -> %d: inode missing", e.parent, e.name, e.d.Ino)
			continue
		}
		if c.Type != e.d.Type {
			r.problem("dentry %d/%q -> %d: says %s, inode is %s", e.parent, e.name, e.d.Ino, e.d.Type, c.Type)
		}
		links[e.d.Ino]++
		children[e.parent] = append(children[e.parent], e.d.Ino)
		if c.Type == TypeDir {
			dirDentry[e.d.Ino] = append(dirDentry[e.d.Ino], e)
			if subdirs[e.parent] == nil {
				subdirs[e.parent] = new([subdirShards]int64)
			}
			subdirs[e.parent][e.d.Ino%subdirShards]++
		}
	}

	ids := make([]uint64, 0, len(st.inodes))
	for ino := range st.inodes {
		ids = append(ids, ino)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var stats FSStats
	for _, ino := range ids {
		in := st.inodes[ino]
		stats.Inodes++
		kind, queued := st.gc[ino]
		switch in.Type {
		case TypeFile:
			r.Files++
			stats.Bytes += int64(in.Length)
			if int(in.Nlink) != links[ino] {
				r.problem("file %d: nlink %d, %d dentries", ino, in.Nlink, links[ino])
			}
			if in.Nlink == 0 && !queued && st.sessions[ino] == 0 && in.Versions == 0 {
				r.problem("file %d: no links, no versions, not queued for GC and no sessions (leaked)", ino)
			}
			if int(in.Versions) != versionRefs[ino] {
				r.problem("file %d: counts %d versions, %d records name it", ino, in.Versions, versionRefs[ino])
			}
			if queued && in.Versions > 0 {
				r.problem("file %d: queued for GC while %d version records name it", ino, in.Versions)
			}
			if queued && kind != gcFile {
				r.problem("file %d queued as %q", ino, kind)
			}
			if in.InlineLen > 0 {
				if uint64(in.InlineLen) > in.Length {
					r.problem("file %d: %d inline bytes past its length %d", ino, in.InlineLen, in.Length)
				}
				if n, ok := st.inline[ino]; !ok || n < int(in.InlineLen) {
					r.problem("file %d: %d inline bytes, its INLN value holds %d (present %v)", ino, in.InlineLen, n, ok)
				}
				if in.Data != 0 || len(in.Layers) > 0 || st.sessions[ino] > 0 {
					r.problem("file %d: inline, yet data id %d, %d layers, %d write sessions", ino, in.Data, len(in.Layers), st.sessions[ino])
				}
			}
		case TypeSymlink, TypeFifo, TypeSocket, TypeCharDev, TypeBlockDev:
			if in.Type == TypeSymlink {
				r.Symlinks++
			} else {
				r.Specials++
			}
			if int(in.Nlink) != links[ino] || in.Nlink == 0 {
				r.problem("%s %d: nlink %d, %d dentries", in.Type, ino, in.Nlink, links[ino])
			}
			if in.Rdev != 0 && !in.Type.Device() {
				r.problem("%s %d: device number %#x", in.Type, ino, in.Rdev)
			}
			if in.Length != 0 || in.Layout != (Layout{}) {
				r.problem("%s %d: length %d, layout %+v", in.Type, ino, in.Length, in.Layout)
			}
		case TypeDir:
			r.Dirs++
			ds := dirDentry[ino]
			switch {
			case ino == RootID:
				if len(ds) != 0 {
					r.problem("root has %d dentries", len(ds))
				}
			case in.Nlink == 1:
				if len(ds) != 1 {
					r.problem("directory %d: %d dentries (want 1)", ino, len(ds))
				} else if ds[0].parent != in.Parent || ds[0].name != in.Name {
					r.problem("directory %d: dentry %d/%q, inode says %d/%q", ino, ds[0].parent, ds[0].name, in.Parent, in.Name)
				}
			case in.Nlink == 0:
				if len(ds) != 0 {
					r.problem("removed directory %d still has %d dentries", ino, len(ds))
				}
				if !queued || kind != gcDir {
					r.problem("removed directory %d not queued for GC", ino)
				}
			default:
				r.problem("directory %d: nlink %d", ino, in.Nlink)
			}
			if in.CountsSubdirs && in.Nlink == 1 {
				var want, got [subdirShards]int64
				if c := subdirs[ino]; c != nil {
					want = *c
				}
				if c := st.subdirs[ino]; c != nil {
					got = *c
				}
				if want != got {
					r.problem("directory %d: nlink counts %d subdirectories, it has %d (by id mod %d: counted %v, found %v)",
						ino, sum(got[:]), sum(want[:]), subdirShards, got, want)
				}
			}
		default:
			r.problem("inode %d: type %d", ino, in.Type)
		}
		if queued && in.Nlink != 0 {
			r.problem("inode %d queued for GC with nlink %d", ino, in.Nlink)
		}
		if st.sessions[ino] > 0 && in.Type != TypeFile {
			r.problem("inode %d: a %s with write sessions", ino, in.Type)
		}
		if shard, v, ok := batchOf(ino); ok && st.alloc[shard] <= v {
			r.problem("inode %d: id not handed out by the allocator (shard %d at %d)", ino, shard, st.alloc[shard])
		} else if !ok && ino != RootID {
			r.problem("inode %d: id below the first batch", ino)
		}
	}
	for ino := range st.inline {
		if in, ok := st.inodes[ino]; !ok || in.InlineLen == 0 {
			r.problem("INLN value of inode %d, which is not an inline file", ino)
		}
	}
	for ino := range st.gc {
		if _, ok := st.inodes[ino]; !ok {
			r.problem("GC entry for missing inode %d", ino)
		}
	}
	st.checkLayers(r)
	for _, sn := range st.snapshots {
		if in := st.inodes[sn.Root]; in == nil || in.Type != TypeDir || in.Nlink == 0 || !in.ReadOnly || in.Name != sn.Name {
			r.problem("snapshot %q of %d: its root %d is not a live read-only directory of that name", sn.Name, sn.Top, sn.Root)
		}
	}

	for ino := range st.sessions {
		if _, ok := st.inodes[ino]; !ok {
			r.problem("sessions of missing inode %d", ino)
		}
	}
	for ino := range st.xattrs {
		if _, ok := st.inodes[ino]; !ok {
			r.problem("xattrs of missing inode %d", ino)
		}
	}
	for ino := range st.locks {
		if _, ok := st.inodes[ino]; !ok {
			r.problem("lock table of missing inode %d", ino)
		}
	}
	for ino, bits := range st.aclBits {
		if in, ok := st.inodes[ino]; ok && in.Mode&0o777 != bits {
			r.problem("inode %d: mode %o does not match its access ACL (%o)", ino, in.Mode&0o777, bits)
		}
	}
	for ino := range st.dirTimes {
		if in, ok := st.inodes[ino]; !ok || in.Type != TypeDir {
			r.problem("directory time or subdirectory count of missing directory %d", ino)
		}
	}
	if stats != st.stats {
		r.problem("statfs counters say %+v, the inodes %+v", st.stats, stats)
	}

	// Reachability: from the root and from every removed directory awaiting GC.
	seen := map[uint64]bool{}
	var walk func(uint64)
	queue := []uint64{}
	walk = func(start uint64) {
		queue = append(queue[:0], start)
		seen[start] = true
		for len(queue) > 0 {
			d := queue[0]
			queue = queue[1:]
			for _, c := range children[d] {
				if seen[c] {
					continue
				}
				seen[c] = true
				if in := st.inodes[c]; in != nil && in.Type == TypeDir {
					queue = append(queue, c)
				}
			}
		}
	}
	walk(RootID)
	for ino, kind := range st.gc {
		if kind == gcDir && !seen[ino] {
			walk(ino)
		}
	}
	for _, ino := range ids {
		in := st.inodes[ino]
		if !seen[ino] && in.Nlink != 0 {
			r.problem("%s %d (nlink %d) unreachable", in.Type, ino, in.Nlink)
		}
	}

	// Parent pointers of live directories lead to the root or a removed
	// directory, without cycles.
	for _, ino := range ids {
		in := st.inodes[ino]
		if in.Type != TypeDir || in.Nlink == 0 {
			continue
		}
		cur, steps := in, 0
		for cur.ID != RootID && cur.Nlink != 0 {
			if steps++; steps > r.Dirs+1 {
				r.problem("directory %d: parent chain has a cycle", ino)
				break
			}
			p, ok := st.inodes[cur.Parent]
			if !ok || p.Type != TypeDir {
				r.problem("directory %d: ancestor %d missing or not a directory", ino, cur.Parent)
				break
			}
			cur = p
		}
	}
}

func sum(v []int64) int64 {
	var s int64
	for _, x := range v {
		s += x
	}
	return s
}

// checkVersions checks the versioning keys (see versions.go) and returns
// how many records name each inode.
func (st *fsckState) checkVersions(r *Report) map[uint64]int {
	refs := map[uint64]int{}
	names := map[uint64]map[string]uint64{}
	for _, e := range st.dentries {
		if names[e.parent] == nil {
			names[e.parent] = map[string]uint64{}
		}
		names[e.parent][e.name] = e.d.Ino
	}
	bucketOK := func(b uint64) bool {
		in, ok := st.inodes[b]
		return ok && in.Type == TypeDir && in.Nlink > 0 && in.Parent == RootID && b != RootID
	}
	for b := range st.versioning {
		if !bucketOK(b) {
			r.problem("versioning state of %d, which is not a live directory in the root", b)
		}
	}
	nulls := map[string]bool{}
	for _, v := range st.versions {
		if !bucketOK(v.bucket) {
			r.problem("version %q of %q in %d, which is not a live directory in the root", v.ID, v.key, v.bucket)
		}
		if v.ID == NullVersion {
			k := fmt.Sprintf("%d/%s", v.bucket, v.key)
			if nulls[k] {
				r.problem("key %q of bucket %d has two null versions", v.key, v.bucket)
			}
			nulls[k] = true
			if cur := st.fileAt(names, v.bucket, v.key); cur != nil && cur.VersionID == "" {
				r.problem("key %q of bucket %d: a null version both current (inode %d) and kept", v.key, v.bucket, cur.ID)
			}
		}
		if v.DeleteMarker() {
			continue
		}
		refs[v.Ino]++
		if in, ok := st.inodes[v.Ino]; !ok || in.Type != TypeFile {
			r.problem("version %q of %q in %d names inode %d, not a file", v.ID, v.key, v.bucket, v.Ino)
		}
	}
	for ino, in := range st.inodes {
		if in.Type != TypeFile && in.Versions > 0 {
			r.problem("%s %d counts %d versions", in.Type, ino, in.Versions)
		}
	}
	return refs
}

// fileAt is the file key names in bucket, if any.
func (st *fsckState) fileAt(names map[uint64]map[string]uint64, bucket uint64, key string) *Inode {
	dir := bucket
	segs := strings.Split(key, "/")
	for i, s := range segs {
		ino, ok := names[dir][s]
		if !ok {
			return nil
		}
		in := st.inodes[ino]
		if in == nil {
			return nil
		}
		if i == len(segs)-1 {
			if in.Type != TypeFile {
				return nil
			}
			return in
		}
		dir = ino
	}
	return nil
}

// checkLayers checks the shared data (layers.go): every layer a file reads
// through has a record whose count is the number of files naming it, with
// the file's layout and a limit in (0, the file's length]; a record is named
// by some file and is no file's own data; a layer queued for deletion has no
// record; no two files own the chunks of one data id.
func (st *fsckState) checkLayers(r *Report) {
	refs := map[uint64]uint32{}
	owner := map[uint64]uint64{}
	for ino, in := range st.inodes {
		if in.Type != TypeFile {
			if in.Data != 0 || len(in.Layers) > 0 {
				r.problem("%s %d has shared data", in.Type, ino)
			}
			continue
		}
		if o, dup := owner[in.DataID()]; dup {
			r.problem("files %d and %d both own the chunks of %d", o, ino, in.DataID())
		}
		owner[in.DataID()] = ino
		seen := map[uint64]bool{}
		for _, l := range in.Layers {
			if seen[l.ID] {
				r.problem("file %d reads through layer %d twice", ino, l.ID)
			}
			seen[l.ID] = true
			refs[l.ID]++
			rec := st.layers[l.ID]
			switch {
			case rec == nil:
				r.problem("file %d reads through layer %d, which has no record", ino, l.ID)
			case rec.Layout != in.Layout:
				r.problem("file %d reads through layer %d of another layout", ino, l.ID)
			}
			if l.Limit == 0 || l.Limit > in.Length {
				r.problem("file %d: layer %d's limit %d (file length %d)", ino, l.ID, l.Limit, in.Length)
			}
		}
	}
	for id, rec := range st.layers {
		if _, ok := owner[id]; ok {
			r.problem("layer %d is also a file's own data", id)
		}
		if rec.Refs != refs[id] {
			r.problem("layer %d counts %d files, %d read through it", id, rec.Refs, refs[id])
		}
		if st.gcLayers[id] {
			r.problem("layer %d is queued for GC and still has a record", id)
		}
	}
}
