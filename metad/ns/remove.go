package ns

import (
	"context"
	"fmt"
)

// RemoveRequest names the entry Unlink, Rmdir or RemoveAll removes.
type RemoveRequest struct {
	ReqID  RequestID
	Parent uint64
	Name   string
	// IfIno and IfGen, when set, make the removal conditional: the entry must
	// still name inode IfIno at generation IfGen, else ErrPrecondition.
	IfIno, IfGen uint64
	// PruneImplicit also removes the ancestors that this removal leaves empty
	// and that are Implicit, in the same transaction.
	PruneImplicit bool
}

// checkVersion enforces a conditional change's expectation about in.
func checkVersion(in *Inode, ino, gen uint64) error {
	if ino != 0 && in.ID != ino {
		return fail(ErrPrecondition, "entry is inode %d, not %d", in.ID, ino)
	}
	if gen != 0 && in.Gen != gen {
		return fail(ErrPrecondition, "inode %d is at generation %d, not %d", in.ID, in.Gen, gen)
	}
	return nil
}

// pruneImplicit removes dir and its ancestors while each is an Implicit,
// empty directory (empty as this transaction sees it). Their entry ranges are
// read with conflict tracking, so a create racing into one of them aborts one
// of the two.
func (o *op) pruneImplicit(dir uint64) error {
	for dir != RootID {
		in, err := o.inode(dir)
		if err != nil {
			return err
		}
		if in.Type != TypeDir || !in.Implicit || in.Nlink == 0 {
			return nil
		}
		empty, err := o.dirEmpty(in.ID)
		if err != nil || !empty {
			return err
		}
		d, found, err := o.dentry(in.Parent, in.Name)
		if err != nil || !found || d.Ino != in.ID {
			return err
		}
		o.clearDentry(in.Parent, in.Name)
		o.deleteInode(in)
		if err := o.addSubdir(in.Parent, in.ID, -1); err != nil {
			return err
		}
		dir = in.Parent
	}
	return nil
}

// Unlink removes a name of anything but a directory (EISDIR for one). The
// inode's nlink drops; at zero a file goes to the GC queue, unless it has open
// write sessions (then the last Close queues it), and a symlink or special
// file is deleted.
// Conflict-tracked: the dentry and the inode (read-modify-written). The result
// is recorded under ReqID, so a retry returns it instead of acting again.
func (n *Namespace) Unlink(ctx context.Context, req RemoveRequest) error {
	_, err := n.UnlinkChange(ctx, req)
	return err
}

// UnlinkChange is Unlink, answering how it changed the parent (Change).
func (n *Namespace) UnlinkChange(ctx context.Context, req RemoveRequest) (Change, error) {
	if err := checkName(req.Name); err != nil {
		return Change{}, err
	}
	rec, err := n.updateIdemAnswer(ctx, req.ReqID.orNew(), opUnlink, func(o *op, answer *idemRecord) error {
		defer answer.noteChange(o)
		d, err := o.existing(req.Parent, req.Name)
		if err != nil {
			return err
		}
		if d.Type == TypeDir {
			return fail(ErrIsDir, "unlink directory %q", req.Name)
		}
		in, err := o.inode(d.Ino)
		if err != nil {
			return err
		}
		return o.unlinkEntry(req, in)
	})
	if err != nil {
		return Change{}, fmt.Errorf("unlink %q: %w", req.Name, err)
	}
	return rec.change(), nil
}

// Rmdir removes an empty directory: ENOTDIR for anything else, ENOTEMPTY if it
// has entries. Its entry range is read with conflict tracking, so a concurrent
// create in it aborts one of the two; the create reads the directory inode,
// which rmdir deletes, so it cannot land in a removed directory.
func (n *Namespace) Rmdir(ctx context.Context, req RemoveRequest) error {
	if err := checkName(req.Name); err != nil {
		return err
	}
	err := n.updateIdem(ctx, req.ReqID.orNew(), opRmdir, func(o *op) error {
		d, err := o.existing(req.Parent, req.Name)
		if err != nil {
			return err
		}
		if d.Type != TypeDir {
			return fail(ErrNotDir, "rmdir %q", req.Name)
		}
		in, err := o.inode(d.Ino)
		if err != nil {
			return err
		}
		if err := o.writable(in); err != nil {
			return err
		}
		empty, err := o.dirEmpty(in.ID)
		if err != nil {
			return err
		}
		if !empty {
			return fail(ErrNotEmpty, "rmdir %q", req.Name)
		}
		if err := o.removableTree(req.Parent, in); err != nil {
			return err
		}
		o.clearDentry(req.Parent, req.Name)
		o.deleteInode(in)
		if err := o.addSubdir(req.Parent, in.ID, -1); err != nil {
			return err
		}
		if req.PruneImplicit {
			return o.pruneImplicit(req.Parent)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rmdir %q: %w", req.Name, err)
	}
	return nil
}

// RemoveAll removes a whole tree (rm -rf) in one small transaction: the root's
// dentry goes, its inode is marked removed (nlink 0) and queued for GC, so the
// tree vanishes from the namespace at once; GCBatch later detaches and frees
// its contents in batches. A file or symlink is simply unlinked.
func (n *Namespace) RemoveAll(ctx context.Context, req RemoveRequest) error {
	if err := checkName(req.Name); err != nil {
		return err
	}
	err := n.updateIdem(ctx, req.ReqID.orNew(), opRemoveAll, func(o *op) error {
		d, err := o.existing(req.Parent, req.Name)
		if err != nil {
			return err
		}
		in, err := o.inode(d.Ino)
		if err != nil {
			return err
		}
		return o.unlinkEntry(req, in)
	})
	if err != nil {
		return fmt.Errorf("remove -r %q: %w", req.Name, err)
	}
	return nil
}

// unlinkEntry removes req's entry of in (after its version check) and
// drops the link; then the implicit ancestors left empty, if asked.
func (o *op) unlinkEntry(req RemoveRequest, in *Inode) error {
	if err := checkVersion(in, req.IfIno, req.IfGen); err != nil {
		return err
	}
	if err := o.writable(in); err != nil {
		return err
	}
	o.clearDentry(req.Parent, req.Name)
	if in.Type == TypeDir {
		if err := o.removableTree(req.Parent, in); err != nil {
			return err
		}
		if err := o.addSubdir(req.Parent, in.ID, -1); err != nil {
			return err
		}
	}
	if in.Type == TypeFile {
		if err := o.versionedUnlink(req.Parent, req.Name, in); err != nil {
			return err
		}
	}
	trashed := false
	if (in.Type == TypeFile && in.Nlink == 1 && in.Versions == 0) || in.Type == TypeDir {
		var err error
		if trashed, err = o.trash(req.Parent, req.Name, in, &[2]uint64{}); err != nil {
			return err
		}
	}
	if !trashed {
		if err := o.dropLink(in, o.now); err != nil {
			return err
		}
	}
	if req.PruneImplicit {
		return o.pruneImplicit(req.Parent)
	}
	return nil
}

// existing reads (parent, name) with conflict tracking and fails when it is
// missing: ENOTDIR if parent is not a directory, else ENOENT.
func (o *op) existing(parent uint64, name string) (*Dentry, error) {
	d, found, err := o.dentry(parent, name)
	if err != nil || found {
		return d, err
	}
	p, err := getInode(o.ctx, o.tx, parent, true)
	if err != nil {
		return nil, err
	}
	if p.Type != TypeDir {
		return nil, fail(ErrNotDir, "inode %d", parent)
	}
	return nil, fail(ErrNotExist, "%q in %d", name, parent)
}

// dropLink takes away one name of in (the caller cleared the dentry). At nlink
// 0 the inode leaves the namespace: a file goes to the GC queue (or, with open
// write sessions, stays marked until its last Close), a symlink or a special
// file is deleted, a
// directory is marked removed and queued for GC expansion. removedAt starts
// the GC grace period.
func (o *op) dropLink(in *Inode, removedAt int64) error {
	if in.Nlink == 0 {
		return fail(ErrIO, "inode %d already has no links", in.ID)
	}
	in.Nlink--
	in.Ctime = o.now
	if in.Type == TypeDir {
		in.Nlink = 0 // a directory has one name
	}
	if in.Nlink > 0 {
		o.putInode(in)
		return nil
	}
	switch in.Type {
	case TypeFile:
		o.putInode(in)
		if in.Versions > 0 {
			return nil // kept as a noncurrent version
		}
		if err := in.removable(o.now, o.bypass); err != nil {
			return err
		}
		busy, err := o.hasSessions(in.ID)
		if err != nil {
			return err
		}
		if !busy {
			o.queueGC(in, removedAt)
		}
	case TypeDir:
		o.putInode(in)
		o.queueGC(in, removedAt)
	default: // symlinks and special files hold nothing to reclaim
		o.deleteInode(in)
	}
	return nil
}
