package ns

import (
	"context"
	"fmt"
	"slices"

	"github.com/flyfs/flyfs/core/kv"
)

// Snapshots. A snapshot is a read-only copy of a directory tree made in ONE
// transaction, so it is the tree at one moment: its directories, symlinks
// and special files copied, its files cloned (clone.go: chunks shared, no
// byte copied, copy-on-write for the live tree), hard links kept as links.
// It lives in the tree's top directory (the child of the root it is under):
//
//	/<top>/.flyfs-snapshots/<name>/<the path from top to the tree>
//
// so the mount shows it and S3 lists it as a prefix of the bucket. Every
// inode of a snapshot, the .flyfs-snapshots directory included, is
// ReadOnly: EROFS for any change but DeleteSnapshot, and a top directory
// holding snapshots cannot be removed. A file open for writing at the moment
// is not captured (its writer's chunks would change under the copy): the
// snapshot lists it as skipped.
//
//	SNAP top(8, LE) name -> SnapshotInfo
//
// The transaction's bounds (the KV's size and time limits) bound the tree:
// a larger one fails with the KV's "transaction too large" error.

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
	// Skipped: files open for writing at the moment, not captured.
	Skipped []string `cbor:"11,keyasint,omitempty"`
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
// returns it.
func (n *Namespace) Snapshot(ctx context.Context, req SnapshotRequest) (SnapshotInfo, error) {
	if err := checkName(req.Name); err != nil {
		return SnapshotInfo{}, err
	}
	req.ReqID = req.ReqID.orNew()
	var res SnapshotInfo
	err := n.update(ctx, func(o *op) error {
		o.snapshotting = true
		src, err := o.inode(req.Dir)
		if err != nil {
			return err
		}
		if src.Type != TypeDir || src.Nlink == 0 {
			return fail(ErrNotDir, "snapshot of %s %d", src.Type, src.ID)
		}
		// The path from the top directory down to the tree.
		chain := []*Inode{src}
		for cur := src; cur.Parent != RootID; {
			if cur.ID == RootID {
				break
			}
			p, err := getInode(o.ctx, o.tx, cur.Parent, true)
			if err != nil {
				return err
			}
			chain = append(chain, p)
			cur = p
		}
		slices.Reverse(chain)
		top := chain[0]
		if top.ID == RootID {
			return fail(ErrInvalid, "snapshot of the root: snapshot a directory under it")
		}
		if src.ReadOnly || (len(chain) > 1 && chain[1].Name == SnapshotDir) {
			return fail(ErrInvalid, "%q is inside a snapshot", src.Name)
		}
		path := ""
		for _, d := range chain {
			path += "/" + d.Name
		}
		if v, found, err := o.tx.Get(o.ctx, snapshotKey(top.ID, req.Name)); err != nil {
			return err
		} else if found {
			if err := decode(v, &res); err != nil {
				return err
			}
			if d, ok, err := o.snapshotRoot(top.ID, req.Name); err != nil {
				return err
			} else if ok && d.ReqID == req.ReqID {
				return nil // our earlier attempt committed
			}
			return fail(ErrExist, "snapshot %q of %q", req.Name, top.Name)
		}

		// The container, made on first use.
		var container *Inode
		if d, found, err := o.dentry(top.ID, SnapshotDir); err != nil {
			return err
		} else if found {
			if container, err = o.inode(d.Ino); err != nil {
				return err
			}
		} else {
			if container, err = o.copyDir(top, top.ID, SnapshotDir, RequestID{}); err != nil {
				return err
			}
			// Implicit: S3 lists the snapshots' objects, not directory markers.
			container.Mode, container.Implicit = 0o555, true
			container.Mtime, container.Atime = o.now, o.now
			o.putInode(container)
		}

		info := SnapshotInfo{Top: top.ID, Name: req.Name, Source: path, Created: o.now,
			Path: "/" + top.Name + "/" + SnapshotDir + "/" + req.Name}
		// The snapshot's root is a copy of the top directory's attributes,
		// then the directories down to the tree (attributes only), then the
		// tree with its contents.
		root, err := o.copyDir(top, container.ID, req.Name, req.ReqID)
		if err != nil {
			return err
		}
		info.Root = root.ID
		if !root.Implicit {
			root.Implicit = true
			o.putInode(root)
		}
		dst := root
		for _, d := range chain[1:] {
			if dst, err = o.copyDir(d, dst.ID, d.Name, RequestID{}); err != nil {
				return err
			}
			info.Path += "/" + d.Name
		}
		if err := o.copyTree(top.ID, src, dst, &info); err != nil {
			return err
		}
		o.tx.Set(snapshotKey(top.ID, req.Name), encode(&info))
		res = info
		return nil
	})
	if kv.CodeOf(err) == kv.CodeTxnTooLarge || kv.CodeOf(err) == kv.CodeTxnTooLong {
		err = fail(ErrTooBig, "the tree is larger than one snapshot can copy (one metadata transaction: %v); snapshot its subdirectories one by one", err)
	}
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot %q: %w", req.Name, err)
	}
	return res, nil
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

// copyTree copies the entries of src into dst, depth first (a top
// directory's snapshots are left out), counting into info.
func (o *op) copyTree(top uint64, src, dst *Inode, info *SnapshotInfo) error {
	type pair struct{ src, dst *Inode }
	clones := map[uint64]*Inode{} // source file -> its copy, for hard links
	stack := []pair{{src, dst}}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		info.Dirs++
		prefix := dentryPrefix(p.src.ID)
		err := scan(o.ctx, o.tx, prefix, prefixEnd(prefix), func(k, v []byte) error {
			name := string(k[len(prefix):])
			if p.src.ID == top && name == SnapshotDir {
				return nil
			}
			var d Dentry
			if err := decode(v, &d); err != nil {
				return err
			}
			// Files are read with conflict tracking (a freeze rewrites them,
			// and a writer opening one must abort the copy); the rest as of
			// the transaction's moment.
			in, err := getInode(o.ctx, o.tx, d.Ino, d.Type != TypeFile)
			if err != nil {
				return err
			}
			switch {
			case in.Type == TypeDir:
				c, err := o.copyDir(in, p.dst.ID, name, RequestID{})
				if err != nil {
					return err
				}
				stack = append(stack, pair{in, c})
			case in.Type == TypeFile && clones[in.ID] != nil:
				c := clones[in.ID]
				c.Nlink++
				o.putInode(c)
				o.putDentry(p.dst.ID, name, &Dentry{Ino: c.ID, Type: TypeFile})
			case in.Type == TypeFile:
				busy, err := o.hasSessions(in.ID)
				if err != nil {
					return err
				}
				if busy {
					info.Skipped = append(info.Skipped, name)
					return nil
				}
				var id, data uint64
				if err := o.newID(&id); err != nil {
					return err
				}
				c, err := o.cloneFile(in, p.dst, id, &data, name, RequestID{})
				if err != nil {
					return err
				}
				c.Mode, c.UID, c.GID, c.Atime, c.Mtime, c.ReadOnly = in.Mode, in.UID, in.GID, in.Atime, in.Mtime, true
				if err := o.copyXattrs(in.ID, id); err != nil {
					return err
				}
				o.putInode(c)
				if in.Nlink > 1 {
					clones[in.ID] = c
				}
				info.Files++
				info.Bytes += in.Length
			default: // symlinks and special files: the inode is all there is
				var id uint64
				if err := o.newID(&id); err != nil {
					return err
				}
				c := &Inode{ID: id, Type: in.Type, Mode: in.Mode, UID: in.UID, GID: in.GID, Atime: in.Atime, Mtime: in.Mtime, Ctime: o.now,
					Nlink: 1, Target: in.Target, Rdev: in.Rdev, ReadOnly: true}
				if err := o.copyXattrs(in.ID, id); err != nil {
					return err
				}
				o.createInode(c)
				o.putDentry(p.dst.ID, name, &Dentry{Ino: id, Type: in.Type})
				info.Others++
			}
			return nil
		})
		if err != nil {
			return err
		}
		delete(o.dirs, p.dst.ID) // its mtime is the source's, set on its inode
	}
	return nil
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
