package ns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/layout"
)

// Snapshots. A snapshot is a read-only copy of a directory tree at one
// moment (one transaction, or several with the namespace frozen): its
// directories, symlinks and special files copied, its files cloned
// (clone.go: chunks shared, no byte copied, copy-on-write for the live
// tree), hard links kept as links.
// It lives in the tree's top directory (the child of the root it is under):
//
//	/<top>/.flyfs-snapshots/<name>/<the path from top to the tree>
//
// so the mount shows it and S3 lists it as a prefix of the bucket. Every
// inode of a snapshot, the .flyfs-snapshots directory included, is
// ReadOnly: EROFS for any change but DeleteSnapshot, and a top directory
// holding snapshots cannot be removed. A file open for writing at the moment
// is not captured (its writer's chunks would change under the copy), nor a
// file at the layer bound (layout.MaxLayers): the snapshot lists them as
// skipped, with why.
//
//	SNAP top(8, LE) name -> SnapshotInfo
//
// A tree too large for one transaction (the KV's size and time bounds) is
// copied in several while the namespace is frozen (freeze.go).

// SnapshotDir is the directory of a top directory that holds its snapshots.
const SnapshotDir = ".flyfs-snapshots"

var tagSnapshot = []byte("SNAP")

func snapshotPrefix(top uint64) []byte { return putID(withTag(tagSnapshot, 8), top) }

func snapshotKey(top uint64, name string) []byte { return append(snapshotPrefix(top), name...) }

// SnapshotInfo describes a snapshot.
type SnapshotInfo struct {
	Top     uint64 `cbor:"1,keyasint"` // the top directory holding it
	Name    string `cbor:"2,keyasint"`
	Root    uint64 `cbor:"3,keyasint"` // its directory .flyfs-snapshots/Name
	Source  string `cbor:"4,keyasint"` // the path of the tree, at the moment
	Path    string `cbor:"5,keyasint"` // where the copy of the tree is
	Created int64  `cbor:"6,keyasint"` // unix ns
	Files   int    `cbor:"7,keyasint,omitempty"`
	Dirs    int    `cbor:"8,keyasint,omitempty"`
	Others  int    `cbor:"9,keyasint,omitempty"` // symlinks and special files
	Bytes   uint64 `cbor:"10,keyasint,omitempty"`
	// Skipped: files not captured (open for writing at the moment, or at
	// the layer bound), each with why.
	Skipped []string `cbor:"11,keyasint,omitempty"`
	// Batches: the transactions it was copied in; Building: not all yet
	// (its metad died while it was made: delete it).
	Batches  int  `cbor:"12,keyasint,omitempty"`
	Building bool `cbor:"13,keyasint,omitempty"`
}

// SnapshotRequest snapshots directory Dir as Name.
type SnapshotRequest struct {
	ReqID RequestID
	Dir   uint64
	Name  string
}

// Snapshot makes a snapshot of a directory tree (see above). EINVAL for the
// root or a tree inside a snapshot; EEXIST if the top directory has a
// snapshot of that name. A retry that finds the snapshot made by its ReqID
// returns it. A tree too large for one transaction is copied in batches
// while the namespace is frozen (freeze.go).
func (n *Namespace) Snapshot(ctx context.Context, req SnapshotRequest) (SnapshotInfo, error) {
	if err := checkName(req.Name); err != nil {
		return SnapshotInfo{}, err
	}
	req.ReqID = req.ReqID.orNew()
	res, err := n.snapshotWhole(ctx, req)
	if errors.Is(err, errTreeTooBig) || kv.CodeOf(err) == kv.CodeTxnTooLarge {
		res, err = n.snapshotFrozen(ctx, req)
	}
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot %q: %w", req.Name, err)
	}
	return res, nil
}

// snapshotWhole copies the tree in one transaction. It waits out another
// snapshot's freeze like any change, and ends its own request's (left by a
// metad that died making it).
func (n *Namespace) snapshotWhole(ctx context.Context, req SnapshotRequest) (SnapshotInfo, error) {
	var res SnapshotInfo
	err := n.runUpdate(ctx, true, func(o *op) error {
		o.snapshotting = true
		if v, found, err := o.tx.Get(o.ctx, keyFreeze); err != nil {
			return err
		} else if found {
			var f freezeRecord
			if err := decode(v, &f); err != nil {
				return err
			}
			switch {
			case f.Req == req.ReqID:
				o.tx.Clear(keyFreeze)
			case o.now < f.Until:
				return errFrozen
			}
		}
		st, existing, err := o.snapshotPrologue(req)
		if err != nil {
			return err
		}
		if existing != nil {
			res = *existing // our earlier attempt committed
			return nil
		}
		done, err := o.copySome(st, math.MaxInt, time.Now().Add(snapshotTxnTime))
		if err != nil {
			return err
		}
		if !done {
			return errTreeTooBig
		}
		st.info.Batches = 1
		o.tx.Set(snapshotKey(st.info.Top, req.Name), encode(&st.info))
		res = st.info
		return nil
	})
	return res, err
}

// errTreeTooBig: the tree is not copied within one transaction's time.
var errTreeTooBig = errors.New("ns: the tree is larger than one snapshot transaction copies")

// snapshotTxnTime bounds the copying of one snapshot transaction, well
// within the KV's transaction time (5 s): a slow store (etcd across hosts)
// copies fewer entries per transaction instead of running out of time.
const snapshotTxnTime = 2 * time.Second

// snapshotBatch is how many entries one transaction of a frozen snapshot
// copies at first: about 2 MB of the KV's 10 MB bound (halved while a
// store's bound is tighter).
const snapshotBatch = 4000

// snapshotFrozen copies the tree in batches of entries, one transaction
// each, with the namespace frozen from the first to the last (the last
// thaws it). Each batch counts itself in the snapshot's record,
// so a batch retried after a maybe-committed commit finds it was done. A
// failure thaws and removes what was copied.
func (n *Namespace) snapshotFrozen(ctx context.Context, req SnapshotRequest) (SnapshotInfo, error) {
	freeze := freezeRecord{Snapshot: req.Name, Until: n.now() + maxFreeze.Nanoseconds(), Req: req.ReqID}
	err := n.runUpdate(ctx, true, func(o *op) error {
		v, found, err := o.tx.Get(o.ctx, keyFreeze)
		if err != nil {
			return err
		}
		var cur freezeRecord
		if found {
			if err := decode(v, &cur); err != nil {
				return err
			}
			if cur == freeze {
				return nil // our earlier attempt committed
			}
			if o.now < cur.Until && cur.Req != req.ReqID {
				return errFrozen // another snapshot's: wait for it
			}
			// Free, past its time, or this request's own from a metad that
			// died making it (the client retried here): take it.
		}
		o.tx.Set(keyFreeze, encode(&freeze))
		return nil
	})
	if err != nil {
		return SnapshotInfo{}, err
	}
	thaw := func() {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = n.runUpdate(tctx, true, func(o *op) error { return o.thaw(freeze) })
	}
	var st, next *copyState
	var top uint64
	budget := snapshotBatch
	for batch := 0; ; batch++ {
		err := n.runUpdate(ctx, true, func(o *op) error {
			o.snapshotting = true
			if err := o.stillFrozen(freeze); err != nil {
				return err
			}
			var cur *copyState
			if batch == 0 {
				s, existing, err := o.snapshotPrologue(req)
				if err != nil {
					return err
				}
				if existing != nil { // finished already: this request's earlier attempt
					done := &copyState{info: *existing}
					next = done
					return o.thaw(freeze)
				}
				cur = s
			} else {
				v, found, err := o.tx.Get(o.ctx, snapshotKey(top, req.Name))
				if err != nil {
					return err
				}
				var rec SnapshotInfo
				if !found || decode(v, &rec) != nil || rec.Root != st.info.Root {
					return fail(ErrIO, "snapshot %q: its record went while it was made", req.Name)
				}
				if rec.Batches > batch {
					return nil // this batch committed
				}
				cur = st.clone()
			}
			done, err := o.copySome(cur, budget, time.Now().Add(snapshotTxnTime))
			if err != nil {
				return err
			}
			cur.info.Batches, cur.info.Building = batch+1, !done
			o.tx.Set(snapshotKey(cur.info.Top, req.Name), encode(&cur.info))
			if done {
				if err := o.thaw(freeze); err != nil {
					return err
				}
			}
			next = cur
			return nil
		})
		if c := kv.CodeOf(err); (c == kv.CodeTxnTooLarge || c == kv.CodeTxnTooLong) && budget > 16 {
			budget /= 2 // this store's bound is tighter: the same batch, smaller
			batch--
			continue
		}
		if err == nil && next == nil {
			err = fail(ErrIO, "snapshot %q: a retried batch found its work done, and no copy of it here", req.Name)
		}
		if err != nil {
			thaw()
			if top != 0 {
				_ = n.DeleteSnapshot(context.WithoutCancel(ctx), NewRequestID(), top, req.Name)
			}
			return SnapshotInfo{}, err
		}
		st, top = next, next.info.Top
		if !st.info.Building {
			return st.info, nil
		}
	}
}

// stillFrozen fails a frozen snapshot's batch once its freeze is gone or
// past its time (changes may have resumed: the copy would not be one
// moment), and renews it.
func (o *op) stillFrozen(f freezeRecord) error {
	v, found, err := o.tx.Get(o.ctx, keyFreeze)
	if err != nil {
		return err
	}
	var cur freezeRecord
	if !found || decode(v, &cur) != nil || cur.Req != f.Req || cur.Snapshot != f.Snapshot || o.now >= cur.Until {
		return fail(ErrBusy, "snapshot %q lost its freeze (%v without a batch): namespace changes resumed", f.Snapshot, maxFreeze)
	}
	// Renewed by every batch: a freeze ends maxFreeze after the last batch
	// of a snapshot whose metad died.
	cur.Until = o.now + maxFreeze.Nanoseconds()
	o.tx.Set(keyFreeze, encode(&cur))
	return nil
}

// thaw ends freeze f if it still holds.
func (o *op) thaw(f freezeRecord) error {
	v, found, err := o.tx.Get(o.ctx, keyFreeze)
	if err != nil || !found {
		return err
	}
	var cur freezeRecord
	if decode(v, &cur) == nil && cur.Req == f.Req && cur.Snapshot == f.Snapshot {
		o.tx.Clear(keyFreeze)
	}
	return nil
}

// copyFrame is a directory being copied: the source, its copy, and the
// last name copied.
type copyFrame struct {
	src, dst uint64
	after    string
	started  bool
}

// copyState is where a snapshot's copy stands between transactions.
type copyState struct {
	stack  []copyFrame
	clones map[uint64]uint64 // a source file of several links -> its copy
	dirs   []uint64          // copies made or filled by this transaction (their mtimes are their sources')
	info   SnapshotInfo
}

func (st *copyState) clone() *copyState {
	c := &copyState{stack: slices.Clone(st.stack), clones: maps.Clone(st.clones), info: st.info}
	c.info.Skipped = slices.Clone(st.info.Skipped)
	return c
}

// snapshotPrologue checks the request, makes the container, the snapshot's
// root and the directories down to the tree, and returns the copy to run;
// or the snapshot this request made already (a retry).
func (o *op) snapshotPrologue(req SnapshotRequest) (*copyState, *SnapshotInfo, error) {
	src, err := o.inode(req.Dir)
	if err != nil {
		return nil, nil, err
	}
	if src.Type != TypeDir || src.Nlink == 0 {
		return nil, nil, fail(ErrNotDir, "snapshot of %s %d", src.Type, src.ID)
	}
	// The path from the top directory down to the tree.
	chain := []*Inode{src}
	for cur := src; cur.ID != RootID && cur.Parent != RootID; {
		p, err := getInode(o.ctx, o.tx, cur.Parent, true)
		if err != nil {
			return nil, nil, err
		}
		chain = append(chain, p)
		cur = p
	}
	slices.Reverse(chain)
	top := chain[0]
	if top.ID == RootID {
		return nil, nil, fail(ErrInvalid, "snapshot of the root: snapshot a directory under it")
	}
	if src.ReadOnly || (len(chain) > 1 && chain[1].Name == SnapshotDir) {
		return nil, nil, fail(ErrInvalid, "%q is inside a snapshot", src.Name)
	}
	path := ""
	for _, d := range chain {
		path += "/" + d.Name
	}
	if v, found, err := o.tx.Get(o.ctx, snapshotKey(top.ID, req.Name)); err != nil {
		return nil, nil, err
	} else if found {
		var res SnapshotInfo
		if err := decode(v, &res); err != nil {
			return nil, nil, err
		}
		d, ok, err := o.snapshotRoot(top.ID, req.Name)
		switch {
		case err != nil:
			return nil, nil, err
		case !ok || d.ReqID != req.ReqID:
			return nil, nil, fail(ErrExist, "snapshot %q of %q", req.Name, top.Name)
		case !res.Building:
			return nil, &res, nil
		}
		// This request's own unfinished copy (its metad died, or its first
		// batch's commit was "maybe committed"): the namespace has not
		// changed since (frozen), so start it again.
		st, _, err := o.dentry(top.ID, SnapshotDir)
		if err != nil {
			return nil, nil, err
		}
		if err := o.dropSnapshotDir(st.Ino, req.Name); err != nil {
			return nil, nil, err
		}
		o.tx.Clear(snapshotKey(top.ID, req.Name))
	}

	// The container, made on first use.
	var container *Inode
	if d, found, err := o.dentry(top.ID, SnapshotDir); err != nil {
		return nil, nil, err
	} else if found {
		if container, err = o.inode(d.Ino); err != nil {
			return nil, nil, err
		}
	} else {
		if container, err = o.copyDir(top, top.ID, SnapshotDir, RequestID{}); err != nil {
			return nil, nil, err
		}
		// Implicit: S3 lists the snapshots' objects, not directory markers.
		container.Mode, container.Implicit = 0o555, true
		container.Mtime, container.Atime = o.now, o.now
		o.putInode(container)
	}

	st := &copyState{clones: map[uint64]uint64{}, info: SnapshotInfo{Top: top.ID, Name: req.Name, Source: path, Created: o.now,
		Path: "/" + top.Name + "/" + SnapshotDir + "/" + req.Name}}
	// The snapshot's root is a copy of the top directory's attributes, then
	// the directories down to the tree (attributes only), then the tree.
	root, err := o.copyDir(top, container.ID, req.Name, req.ReqID)
	if err != nil {
		return nil, nil, err
	}
	st.info.Root = root.ID
	root.Implicit = true
	o.putInode(root)
	st.dirs = append(st.dirs, root.ID)
	dst := root
	for _, d := range chain[1:] {
		if dst, err = o.copyDir(d, dst.ID, d.Name, RequestID{}); err != nil {
			return nil, nil, err
		}
		st.dirs = append(st.dirs, dst.ID)
		st.info.Path += "/" + d.Name
	}
	st.stack = []copyFrame{{src: src.ID, dst: dst.ID}}
	return st, nil, nil
}

// copyDir makes a read-only directory named name in parent with src's
// attributes and xattrs (no entries), counted among parent's
// subdirectories; its mtime is src's own, not the time of the copy.
func (o *op) copyDir(src *Inode, parent uint64, name string, req RequestID) (*Inode, error) {
	var id uint64
	if err := o.newID(&id); err != nil {
		return nil, err
	}
	v := *src
	if err := dirView(o.ctx, o.tx, &v); err != nil {
		return nil, err
	}
	in := &Inode{ID: id, Type: TypeDir, Mode: src.Mode, UID: src.UID, GID: src.GID, CountsSubdirs: true,
		Atime: src.Atime, Mtime: v.Mtime, Ctime: o.now, Nlink: 1, Parent: parent, Name: name,
		DefaultLayout: src.DefaultLayout, Implicit: src.Implicit, ReadOnly: true}
	if err := o.copyXattrs(src.ID, id); err != nil {
		return nil, err
	}
	o.createInode(in)
	o.putDentry(parent, name, &Dentry{Ino: id, Type: TypeDir, ReqID: req})
	if err := o.addSubdir(parent, id, 1); err != nil {
		return nil, err
	}
	return in, nil
}

// copySome copies up to budget entries of the tree, depth first (a top
// directory's snapshots are left out), stopping between pages once past
// deadline, and reports whether the copy is done.
func (o *op) copySome(st *copyState, budget int, deadline time.Time) (bool, error) {
	defer func() {
		for _, d := range st.dirs {
			delete(o.dirs, d) // a copy's mtime is its source's, on its inode
		}
		st.dirs = st.dirs[:0]
	}()
	copied := 0
	for len(st.stack) > 0 && budget > 0 && (copied == 0 || time.Now().Before(deadline)) {
		i := len(st.stack) - 1
		fr := st.stack[i]
		if !fr.started {
			fr.started = true
			st.info.Dirs++
		}
		prefix := dentryPrefix(fr.src)
		begin := prefix
		if fr.after != "" {
			begin = append(dentryKey(fr.src, fr.after), 0)
		}
		limit := min(budget, 256)
		res, err := o.tx.SnapshotGetRange(o.ctx, begin, prefixEnd(prefix), kv.RangeOptions{Limit: limit})
		if err != nil {
			return false, err
		}
		var children []copyFrame
		for _, e := range res.KVs {
			name := string(e.Key[len(prefix):])
			fr.after = name
			budget--
			copied++
			if fr.src == st.info.Top && name == SnapshotDir {
				continue
			}
			var d Dentry
			if err := decode(e.Value, &d); err != nil {
				return false, err
			}
			child, err := o.copyEntry(st, fr.dst, name, &d)
			if err != nil {
				return false, err
			}
			if child != nil {
				children = append(children, *child)
			}
		}
		st.stack[i] = fr
		if !res.More {
			st.stack = slices.Delete(st.stack, i, i+1) // every entry copied
		}
		st.dirs = append(st.dirs, fr.dst)
		st.stack = append(st.stack, children...)
	}
	return len(st.stack) == 0, nil
}

// copyEntry copies entry name (d) of a tree into directory dst; a
// directory's copy is returned to be filled.
func (o *op) copyEntry(st *copyState, dst uint64, name string, d *Dentry) (*copyFrame, error) {
	// Files are read with conflict tracking (a freeze rewrites them, and a
	// writer opening one must abort the copy); the rest as of the moment.
	in, err := getInode(o.ctx, o.tx, d.Ino, d.Type != TypeFile)
	if err != nil {
		return nil, err
	}
	info := &st.info
	switch {
	case in.Type == TypeDir:
		c, err := o.copyDir(in, dst, name, RequestID{})
		if err != nil {
			return nil, err
		}
		st.dirs = append(st.dirs, c.ID)
		return &copyFrame{src: in.ID, dst: c.ID}, nil
	case in.Type == TypeFile && st.clones[in.ID] != 0:
		c, err := o.inode(st.clones[in.ID])
		if err != nil {
			return nil, err
		}
		c.Nlink++
		o.putInode(c)
		o.putDentry(dst, name, &Dentry{Ino: c.ID, Type: TypeFile})
	case in.Type == TypeFile:
		busy, err := o.hasSessions(in.ID)
		if err != nil {
			return nil, err
		}
		if busy {
			info.Skipped = append(info.Skipped, name+" (open for writing)")
			return nil, nil
		}
		if len(in.Layers) >= layout.MaxLayers {
			info.Skipped = append(info.Skipped, fmt.Sprintf("%s (reads through %d layers: a copy of it by bytes has none)", name, len(in.Layers)))
			return nil, nil
		}
		var id, data uint64
		if err := o.newID(&id); err != nil {
			return nil, err
		}
		c, err := o.cloneFile(in, dst, id, &data, name, RequestID{})
		if err != nil {
			return nil, err
		}
		c.Mode, c.UID, c.GID, c.Atime, c.Mtime, c.ReadOnly = in.Mode, in.UID, in.GID, in.Atime, in.Mtime, true
		if err := o.copyXattrs(in.ID, id); err != nil {
			return nil, err
		}
		o.putInode(c)
		if in.Nlink > 1 {
			st.clones[in.ID] = c.ID
		}
		info.Files++
		info.Bytes += in.Length
	default: // symlinks and special files: the inode is all there is
		var id uint64
		if err := o.newID(&id); err != nil {
			return nil, err
		}
		c := &Inode{ID: id, Type: in.Type, Mode: in.Mode, UID: in.UID, GID: in.GID, Atime: in.Atime, Mtime: in.Mtime, Ctime: o.now,
			Nlink: 1, Target: in.Target, Rdev: in.Rdev, ReadOnly: true}
		if err := o.copyXattrs(in.ID, id); err != nil {
			return nil, err
		}
		o.createInode(c)
		o.putDentry(dst, name, &Dentry{Ino: id, Type: in.Type})
		info.Others++
	}
	return nil, nil
}

// ListSnapshots returns the snapshots of every top directory, by top
// directory and name.
func (n *Namespace) ListSnapshots(ctx context.Context) ([]SnapshotInfo, error) {
	var out []SnapshotInfo
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		out = nil
		return scan(ctx, tx, tagSnapshot, prefixEnd(tagSnapshot), func(_, v []byte) error {
			var s SnapshotInfo
			if err := decode(v, &s); err != nil {
				return err
			}
			out = append(out, s)
			return nil
		})
	})
	return out, err
}

// DeleteSnapshot removes snapshot name of top directory top: its tree goes
// at once (GC frees it in batches, and a shared chunk only when no file
// reads it any more), its record with it.
func (n *Namespace) DeleteSnapshot(ctx context.Context, req RequestID, top uint64, name string) error {
	err := n.updateIdem(ctx, req.orNew(), opDeleteSnapshot, func(o *op) error {
		o.snapshotting = true
		v, found, err := o.tx.Get(o.ctx, snapshotKey(top, name))
		if err != nil {
			return err
		}
		if !found {
			return fail(ErrNotExist, "snapshot %q of directory %d", name, top)
		}
		var info SnapshotInfo
		if err := decode(v, &info); err != nil {
			return err
		}
		o.tx.Clear(snapshotKey(top, name))
		st, found, err := o.dentry(top, SnapshotDir)
		if err != nil || !found {
			return err // without its tree: fsck reports such a record
		}
		// Whether this is the container's last snapshot: then it goes too.
		p := dentryPrefix(st.Ino)
		res, err := o.tx.GetRange(o.ctx, p, prefixEnd(p), kv.RangeOptions{Limit: 2})
		if err != nil {
			return err
		}
		last := len(res.KVs) == 1 && string(res.KVs[0].Key[len(p):]) == name
		if err := o.dropSnapshotDir(st.Ino, name); err != nil {
			return err
		}
		if last {
			return o.dropSnapshotDir(top, SnapshotDir)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete snapshot %q: %w", name, err)
	}
	return nil
}

// snapshotRoot is the dentry of snapshot name of top.
func (o *op) snapshotRoot(top uint64, name string) (*Dentry, bool, error) {
	st, found, err := o.dentry(top, SnapshotDir)
	if err != nil || !found {
		return nil, false, err
	}
	return o.dentry(st.Ino, name)
}

// dropSnapshotDir removes directory name of parent and its tree (GC
// detaches and frees it); never into the trash, whose restores would bring
// read-only inodes out of a snapshot.
func (o *op) dropSnapshotDir(parent uint64, name string) error {
	d, found, err := o.dentry(parent, name)
	if err != nil || !found {
		return err
	}
	in, err := o.inode(d.Ino)
	if err != nil {
		return err
	}
	o.clearDentry(parent, name)
	if err := o.addSubdir(parent, in.ID, -1); err != nil {
		return err
	}
	return o.dropLink(in, o.now)
}
