package ns

import (
	"context"
	"fmt"
)

// Rename flags (renameat2).
const (
	RenameNoReplace uint32 = 1 // fail with EEXIST instead of replacing
	RenameExchange  uint32 = 2 // swap two existing entries
	RenameWhiteout  uint32 = 4 // unsupported
)

// RenameRequest moves SrcParent/SrcName to DstParent/DstName.
type RenameRequest struct {
	ReqID     RequestID
	SrcParent uint64
	SrcName   string
	DstParent uint64
	DstName   string
	Flags     uint32
	// IfDstIno and IfDstGen, when set, make the rename conditional: the
	// destination must exist and be inode IfDstIno at generation IfDstGen,
	// else ErrPrecondition (compare-and-swap publishing, S3 If-Match).
	IfDstIno, IfDstGen uint64
	// PruneImplicit removes the Implicit ancestors the move leaves empty.
	PruneImplicit bool
	// Lock, when set, puts the moved file under object lock as it takes
	// its new name (an S3 PUT with retention into an Enabled bucket).
	Lock *Retention
}

// Rename moves an entry in one transaction with POSIX semantics: an existing
// destination is replaced (file over non-directory, empty directory over
// directory; otherwise EISDIR/ENOTDIR/ENOTEMPTY), a directory moves with its
// whole subtree, and moving a directory into its own subtree is EINVAL.
// RenameNoReplace makes an existing destination EEXIST; RenameExchange swaps
// two existing entries.
//
// Conflict-tracked: both dentries, the destination parent inode, the moved and
// replaced inodes, the replaced directory's entry range, and, when a directory
// changes parent, every ancestor of its new parent up to the root. That walk is
// the loop check, and because a directory rename rewrites the moved inode (its
// Parent), two renames that would together close a cycle (mv /a /b/a racing
// mv /b /a/b) each read what the other writes: one of them aborts and, retried,
// sees the other's result and fails with EINVAL.
func (n *Namespace) Rename(ctx context.Context, req RenameRequest) error {
	_, err := n.RenameChange(ctx, req)
	return err
}

// RenameChange is Rename, answering how it changed the two parents (Change).
func (n *Namespace) RenameChange(ctx context.Context, req RenameRequest) (Change, error) {
	if err := checkName(req.SrcName); err != nil {
		return Change{}, err
	}
	if err := checkName(req.DstName); err != nil {
		return Change{}, err
	}
	switch req.Flags {
	case 0, RenameNoReplace, RenameExchange:
	case RenameWhiteout:
		return Change{}, fail(ErrNotSup, "RENAME_WHITEOUT")
	default:
		return Change{}, fail(ErrInvalid, "rename flags %#x", req.Flags)
	}
	exchange := req.Flags == RenameExchange
	rec, err := n.updateIdemAnswer(ctx, req.ReqID.orNew(), opRename, func(o *op, answer *idemRecord) error {
		defer answer.noteChange(o)
		src, err := o.existing(req.SrcParent, req.SrcName)
		if err != nil {
			return err
		}
		if _, err := o.liveDir(req.DstParent); err != nil {
			return err
		}
		dst, dstFound, err := o.dentry(req.DstParent, req.DstName)
		if err != nil {
			return err
		}
		if req.SrcParent == req.DstParent && req.SrcName == req.DstName {
			return nil
		}
		if dstFound && dst.Ino == src.Ino {
			return nil // two links of one file: POSIX says do nothing
		}
		switch {
		case exchange && !dstFound:
			return fail(ErrNotExist, "exchange with missing %q", req.DstName)
		case dstFound && req.Flags == RenameNoReplace:
			return fail(ErrExist, "rename onto %q", req.DstName)
		case !dstFound && (req.IfDstIno != 0 || req.IfDstGen != 0):
			return fail(ErrPrecondition, "rename onto missing %q", req.DstName)
		}
		srcIn, err := o.inode(src.Ino)
		if err != nil {
			return err
		}
		if err := o.writable(srcIn); err != nil {
			return err
		}
		var dstIn *Inode
		if dstFound {
			if dstIn, err = o.inode(dst.Ino); err != nil {
				return err
			}
			if err := checkVersion(dstIn, req.IfDstIno, req.IfDstGen); err != nil {
				return err
			}
			if err := o.writable(dstIn); err != nil {
				return err
			}
			if !exchange {
				if err := o.replaceable(srcIn, dstIn); err != nil {
					return err
				}
			}
		}
		if srcIn.Type == TypeDir && req.SrcParent != req.DstParent {
			if err := o.notAncestor(srcIn.ID, req.DstParent); err != nil {
				return err
			}
		}
		if exchange && dstIn.Type == TypeDir && req.SrcParent != req.DstParent {
			if err := o.notAncestor(dstIn.ID, req.SrcParent); err != nil {
				return err
			}
		}

		if srcIn.Type == TypeDir && req.SrcParent == RootID && req.DstParent != RootID {
			// A bucket's versions are keyed by it as a directory of the root.
			if st, err := o.versioning(srcIn.ID); err != nil || st != Unversioned {
				return errOr(err, fail(ErrPerm, "a versioned bucket stays in the root"))
			}
		}
		if exchange {
			if srcIn.retained(o.now) || dstIn.retained(o.now) || req.Lock != nil {
				return fail(ErrPerm, "exchange of a file under object lock")
			}
			o.putDentry(req.DstParent, req.DstName, &Dentry{Ino: srcIn.ID, Type: srcIn.Type, ReqID: req.ReqID})
			o.putDentry(req.SrcParent, req.SrcName, &Dentry{Ino: dstIn.ID, Type: dstIn.Type, ReqID: req.ReqID})
			if err := o.moved(srcIn, req.SrcParent, req.DstParent, req.DstName); err != nil {
				return err
			}
			return o.moved(dstIn, req.DstParent, req.SrcParent, req.SrcName)
		}
		if srcIn.Type == TypeFile {
			if err := o.versionedRename(req.SrcParent, req.SrcName, req.DstParent, req.DstName, srcIn, dstIn, req.Lock); err != nil {
				return err
			}
		} else if req.Lock != nil {
			return fail(ErrInvalid, "object lock on a %s", srcIn.Type)
		}
		o.clearDentry(req.SrcParent, req.SrcName)
		if dstIn != nil {
			if dstIn.Type == TypeDir {
				o.deleteInode(dstIn) // empty, checked above
				if err := o.addSubdir(req.DstParent, dstIn.ID, -1); err != nil {
					return err
				}
			} else if trashed, err := o.trashReplaced(req.DstParent, req.DstName, dstIn); err != nil {
				return err
			} else if !trashed {
				if err := o.dropLink(dstIn, o.now); err != nil {
					return err
				}
			}
		}
		o.putDentry(req.DstParent, req.DstName, &Dentry{Ino: srcIn.ID, Type: srcIn.Type, ReqID: req.ReqID})
		if err := o.moved(srcIn, req.SrcParent, req.DstParent, req.DstName); err != nil {
			return err
		}
		if req.PruneImplicit && req.SrcParent != req.DstParent {
			return o.pruneImplicit(req.SrcParent)
		}
		return nil
	})
	if err != nil {
		return Change{}, fmt.Errorf("rename %q -> %q: %w", req.SrcName, req.DstName, err)
	}
	return rec.change(), nil
}

// replaceable checks that src may replace dst.
func (o *op) replaceable(src, dst *Inode) error {
	switch {
	case src.Type == TypeDir && dst.Type != TypeDir:
		return fail(ErrNotDir, "rename directory over a %s", dst.Type)
	case src.Type != TypeDir && dst.Type == TypeDir:
		return fail(ErrIsDir, "rename a %s over a directory", src.Type)
	case dst.Type == TypeDir:
		empty, err := o.dirEmpty(dst.ID)
		if err != nil {
			return err
		}
		if !empty {
			return fail(ErrNotEmpty, "rename over directory %d", dst.ID)
		}
	}
	return nil
}

// notAncestor fails with EINVAL if dir is dst or one of its ancestors. Every
// ancestor inode is read with conflict tracking (see Rename); a removed
// ancestor means the destination is gone (ENOENT).
func (o *op) notAncestor(dir, dst uint64) error {
	seen := map[uint64]bool{}
	for cur := dst; ; {
		if cur == dir {
			return fail(ErrInvalid, "move directory %d into its own subtree", dir)
		}
		if cur == RootID {
			return nil
		}
		if seen[cur] {
			return fail(ErrIO, "directory cycle through %d", cur)
		}
		seen[cur] = true
		in, err := o.inode(cur)
		if err != nil {
			return err
		}
		if in.Type != TypeDir {
			return fail(ErrIO, "ancestor %d is a %s", cur, in.Type)
		}
		if in.Nlink == 0 {
			return fail(ErrNotExist, "destination is inside removed directory %d", cur)
		}
		cur = in.Parent
	}
}

// moved updates an inode that got a new name, in parent, from from: ctime,
// and a directory's Parent and Name, and which directory counts it.
func (o *op) moved(in *Inode, from, parent uint64, name string) error {
	in.Ctime = o.now
	if in.Type == TypeDir {
		in.Parent, in.Name = parent, name
	}
	o.putInode(in)
	if in.Type != TypeDir || from == parent {
		return nil
	}
	if err := o.addSubdir(from, in.ID, -1); err != nil {
		return err
	}
	return o.addSubdir(parent, in.ID, 1)
}
