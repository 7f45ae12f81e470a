package ns

import (
	"context"
	"fmt"

	"github.com/flyfs/flyfs/core/layout"
)

// MaxFileSize is the largest file length (2^50 bytes): chunk indexes and
// offsets stay far from overflow.
const MaxFileSize = 1 << 50

// AttrMask selects the attributes SetAttr changes.
type AttrMask uint32

// The settable attributes.
const (
	SetMode AttrMask = 1 << iota
	SetUID
	SetGID
	SetAtime
	SetMtime
	SetSize // truncate or extend a file
	SetStripeHint
	SetImplicit // a directory's Implicit flag (an S3 marker makes it explicit)
	IfGenIs     // change nothing unless the inode is at generation Gen (ErrPrecondition)
)

// SetAttrRequest carries the new values of the attributes in Mask.
type SetAttrRequest struct {
	Mask         AttrMask
	Mode         uint32 // permission bits
	UID, GID     uint32
	Atime, Mtime int64 // unix ns
	Size         uint64
	StripeHint   uint32 // chains a file's chunks may be on (only grows)
	Implicit     bool
	Gen          uint64 // with IfGenIs
}

// SetAttr changes attributes of inode ino (chmod, chown, utimes, truncate) in
// one read-modify-write of the inode, and returns the new inode.
func (n *Namespace) SetAttr(ctx context.Context, ino uint64, req SetAttrRequest) (Inode, error) {
	var res *Inode
	err := n.update(ctx, func(o *op) error {
		in, err := o.inode(ino)
		if err != nil {
			return err
		}
		if err := o.writable(in); err != nil {
			return err
		}
		if req.Mask&IfGenIs != 0 && in.Gen != req.Gen {
			return fail(ErrPrecondition, "inode %d is at generation %d, not %d", ino, in.Gen, req.Gen)
		}
		if req.Mask&SetSize != 0 {
			switch in.Type {
			case TypeFile:
			case TypeDir:
				return fail(ErrIsDir, "truncate directory %d", ino)
			default:
				return fail(ErrInvalid, "truncate %s %d", in.Type, ino)
			}
		}
		if req.Mask&SetSize != 0 {
			if err := o.changeable(in); err != nil {
				return err
			}
		}
		if req.Mask&SetSize != 0 && req.Size > MaxFileSize {
			return fail(ErrFBig, "size %d past the largest file (%d)", req.Size, uint64(MaxFileSize))
		}
		if req.Mask&SetImplicit != 0 {
			if in.Type != TypeDir {
				return fail(ErrNotDir, "implicit flag on a %s", in.Type)
			}
			in.Implicit = req.Implicit
		}
		if req.Mask&SetStripeHint != 0 && in.Type != TypeFile {
			return fail(ErrInvalid, "stripe hint on a %s", in.Type)
		}
		if req.Mask&SetMode != 0 {
			in.Mode = req.Mode & 07777
			if err := o.chmodACL(in); err != nil {
				return err
			}
		}
		if req.Mask&SetUID != 0 {
			in.UID = req.UID
		}
		if req.Mask&SetGID != 0 {
			in.GID = req.GID
		}
		if req.Mask&SetAtime != 0 {
			in.Atime = req.Atime
		}
		if req.Mask&SetMtime != 0 {
			in.Mtime = req.Mtime
			if in.Type == TypeDir {
				// An explicit mtime holds until the next entry change: the
				// latest one so far must not show through it.
				o.tx.Clear(dirTimeKey(in.ID))
			}
		}
		if req.Mask&SetSize != 0 {
			o.truncate(in, req.Size)
		}
		if req.Mask&SetStripeHint != 0 && req.StripeHint > in.StripeHint {
			in.StripeHint = req.StripeHint
			if c := in.Layout.Stripe; c > 0 {
				in.StripeHint = min(in.StripeHint, c)
			}
		}
		in.Ctime = o.now
		o.putInode(in)
		res = in
		if in.Type == TypeDir {
			v := *in
			res = &v
			return dirView(o.ctx, o.tx, res)
		}
		return nil
	})
	if err != nil {
		return Inode{}, fmt.Errorf("setattr %d: %w", ino, err)
	}
	return *res, nil
}

// truncate sets a file's length. Shrinking bumps TruncateVer so that length
// hints from before the truncate (which may be larger) are ignored; the caller
// removes the chunks past the new end. Reports whether anything changed.
func (o *op) truncate(in *Inode, size uint64) bool {
	if size == in.Length {
		return false
	}
	if size < in.Length {
		in.TruncateVer++
		var cut []layout.Layer
		in.Layers, cut = layout.CutLayers(in.Layers, size)
		o.released = append(o.released, cut...)
		o.trimInline(in, size)
	}
	in.OwnClean = false // the cut chunk becomes the file's own
	o.setLength(in, size)
	in.Mtime, in.Ctime = o.now, o.now
	in.Gen++
	return true
}

// Truncate sets a file's length (see SetAttr with SetSize).
func (n *Namespace) Truncate(ctx context.Context, ino uint64, size uint64) (Inode, error) {
	return n.SetAttr(ctx, ino, SetAttrRequest{Mask: SetSize, Size: size})
}

// applyHint applies a writer's length hint: it can only grow the length,
// and only within the current truncateVer (a hint from before a truncate is
// stale). wrote says data was written since the writer's last hint: then Gen
// and mtime move even if the length does not (an overwrite in place is a new
// version too).
func (o *op) applyHint(in *Inode, ver, length uint64, wrote bool) (bool, error) {
	if in.Type != TypeFile {
		return false, fail(ErrInvalid, "length of a %s", in.Type)
	}
	if ver > in.TruncateVer {
		return false, fail(ErrInvalid, "length hint of truncateVer %d, inode %d is at %d", ver, in.ID, in.TruncateVer)
	}
	changed := false
	if ver == in.TruncateVer && length > in.Length {
		o.setLength(in, length)
		in.Mtime = o.now
		changed = true
	}
	if wrote {
		in.Gen++
		in.Mtime, in.Ctime = o.now, o.now
		changed = true
	}
	return changed, nil
}

// ReportLength applies a client's periodic length hint and returns the inode.
// Idempotent: a hint never shrinks the length.
func (n *Namespace) ReportLength(ctx context.Context, ino, truncateVer, length uint64, wrote bool) (Inode, error) {
	var res *Inode
	err := n.update(ctx, func(o *op) error {
		in, err := o.inode(ino)
		if err != nil {
			return err
		}
		changed, err := o.applyHint(in, truncateVer, length, wrote)
		if err != nil {
			return err
		}
		if changed {
			o.putInode(in)
		}
		res = in
		return nil
	})
	if err != nil {
		return Inode{}, fmt.Errorf("report length %d: %w", ino, err)
	}
	return *res, nil
}

// SettleLength stores the exact length learned from storage (the last chunk of
// each chain). A settled length below the stored one bumps truncateVer, since
// the stored one came from a hint that no longer holds.
func (n *Namespace) SettleLength(ctx context.Context, ino, length uint64) (Inode, error) {
	var res *Inode
	err := n.update(ctx, func(o *op) error {
		in, err := o.inode(ino)
		if err != nil {
			return err
		}
		if in.Type != TypeFile {
			return fail(ErrInvalid, "length of a %s", in.Type)
		}
		if o.truncate(in, length) {
			o.putInode(in)
		}
		res = in
		return nil
	})
	if err != nil {
		return Inode{}, fmt.Errorf("settle length %d: %w", ino, err)
	}
	return *res, nil
}

// SetLayout sets a directory's default layout, inherited by children created
// later (existing files keep theirs).
func (n *Namespace) SetLayout(ctx context.Context, dir uint64, l Layout) (Inode, error) {
	var res *Inode
	err := n.update(ctx, func(o *op) error {
		in, err := o.inode(dir)
		if err != nil {
			return err
		}
		if in.Type != TypeDir {
			return fail(ErrNotDir, "set layout of a %s", in.Type)
		}
		if err := o.writable(in); err != nil {
			return err
		}
		in.DefaultLayout = &l
		in.Ctime = o.now
		o.putInode(in)
		res = in
		return nil
	})
	if err != nil {
		return Inode{}, fmt.Errorf("set layout %d: %w", dir, err)
	}
	return *res, nil
}

// GetLayout returns a directory's default layout or a file's layout.
func (n *Namespace) GetLayout(ctx context.Context, ino uint64) (Layout, error) {
	in, err := n.Stat(ctx, ino)
	if err != nil {
		return Layout{}, err
	}
	switch in.Type {
	case TypeDir:
		if in.DefaultLayout != nil {
			return *in.DefaultLayout, nil
		}
		return Layout{}, nil
	case TypeFile:
		return in.Layout, nil
	}
	return Layout{}, fail(ErrInvalid, "layout of a %s", in.Type)
}
