package ns

import (
	"context"
	"fmt"
	"slices"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/layout"
)

// CloneRequest makes a new file with the bytes of an existing one, sharing
// its chunks (a zero-copy copy).
type CloneRequest struct {
	ReqID  RequestID
	Src    uint64 // the file whose bytes the clone gets
	Parent uint64
	Name   string
	// Preserve keeps the source's mode, owner, times and xattrs (a
	// snapshot's copy); otherwise the clone has Mode, UID and GID, the time
	// now, and no xattrs (a new file, as a copy made by writing would be).
	Preserve bool
	Mode     uint32
	UID, GID uint32
}

// Clone creates Name in Parent with Src's bytes, in one transaction and in
// time independent of the file's size: no byte moves. Src's own chunks are
// frozen into a layer (unless it owns none since it was itself cloned): Src
// writes its own chunks under a new data id from then on, and both files
// read through the layer (core/layout's shared data). A file open for
// writing is refused (EBUSY): its writer's chunks would change under the
// clone. A name that exists is EEXIST; a retry that finds the dentry stamped
// with its ReqID returns that file.
func (n *Namespace) Clone(ctx context.Context, req CloneRequest) (Inode, error) {
	if err := checkName(req.Name); err != nil {
		return Inode{}, err
	}
	req.ReqID = req.ReqID.orNew()
	var id, data uint64 // id: allocated once, reused by retries
	var res *Inode
	err := n.update(ctx, func(o *op) error {
		if d, err := o.retried(req.Parent, req.Name, req.ReqID, "clone"); err != nil || d != nil {
			if err != nil {
				return err
			}
			return o.own(d, TypeFile, &res)
		}
		src, err := o.inode(req.Src)
		if err != nil {
			return err
		}
		p, err := o.liveDir(req.Parent)
		if err != nil {
			return err
		}
		if err := o.newID(&id); err != nil {
			return err
		}
		in, err := o.cloneFile(src, p.ID, id, &data, req.Name, req.ReqID)
		if err != nil {
			return err
		}
		if req.Preserve {
			in.Mode, in.UID, in.GID = src.Mode, src.UID, src.GID
			in.Atime, in.Mtime = src.Atime, src.Mtime
			if err := o.copyXattrs(src.ID, id); err != nil {
				return err
			}
		} else {
			_, gid := inheritGroup(p, 0, req.GID, false)
			in.Mode, in.UID, in.GID = req.Mode&07777, req.UID, gid
		}
		o.putInode(in)
		res = in
		return nil
	})
	if err != nil {
		return Inode{}, fmt.Errorf("clone %d as %q: %w", req.Src, req.Name, err)
	}
	return *res, nil
}

// cloneFile makes file id named name in directory parent with src's bytes: src's own
// chunks are frozen into a layer unless it owns none, both read through the
// layers, and the new file (mode 0, owned by root, times now: the caller
// sets them and puts it again) is counted and named. data is the id src
// writes under once frozen (allocated when 0, then reset). A file open for
// writing is EBUSY.
func (o *op) cloneFile(src *Inode, parent, id uint64, data *uint64, name string, req RequestID) (*Inode, error) {
	switch {
	case src.Type != TypeFile:
		return nil, fail(ErrInvalid, "clone of a %s", src.Type)
	case src.Nlink == 0 && src.Versions == 0:
		return nil, fail(ErrNotExist, "inode %d was removed", src.ID)
	case len(src.Layers) >= layout.MaxLayers:
		return nil, fail(ErrInvalid, "inode %d already reads through %d layers", src.ID, len(src.Layers))
	}
	layers, err := o.shareOf(src, data)
	if err != nil {
		return nil, err
	}
	in := &Inode{ID: id, Type: TypeFile, Nlink: 1, Length: src.Length, Layout: src.Layout, StripeHint: src.StripeHint,
		Layers: layers, OwnClean: true, Gen: 1, Atime: o.now, Mtime: o.now, Ctime: o.now}
	if err := o.copyInline(src, in); err != nil { // an inline file's copy is its bytes
		return nil, err
	}
	o.createInode(in)
	o.putDentry(parent, name, &Dentry{Ino: id, Type: TypeFile, ReqID: req})
	return in, nil
}

// shareOf returns the layers a new reader of src's bytes lists, each
// counted once more: src's own chunks frozen into a layer first unless it
// owns none (data is the id src writes under then: allocated when 0, then
// reset). A file open for writing is EBUSY.
func (o *op) shareOf(src *Inode, data *uint64) ([]layout.Layer, error) {
	busy, err := o.hasSessions(src.ID)
	if err != nil {
		return nil, err
	}
	if busy {
		return nil, fail(ErrBusy, "inode %d is open for writing", src.ID)
	}
	if src.InlineLen > 0 {
		return nil, nil // no chunks: its clones copy its bytes (cloneFile)
	}
	if !src.OwnClean && src.Length > 0 && src.Layout.TableID != 0 {
		// Freeze the source's own chunks: they become a layer both read
		// through, and the source writes under a new data id.
		if err := o.newID(data); err != nil {
			return nil, err
		}
		frozen := layout.Layer{ID: src.DataID(), Limit: src.Length}
		o.tx.Set(layerKey(frozen.ID), encode(&layerRecord{Refs: 1, Layout: src.Layout, Length: src.Length}))
		src.Data = *data
		src.Layers = append([]layout.Layer{frozen}, src.Layers...)
		*data = 0 // the next freeze takes a new id
	}
	if !src.OwnClean {
		src.OwnClean = true
		o.putInode(src)
	}
	if err := o.refLayers(src.Layers); err != nil {
		return nil, err
	}
	return slices.Clone(src.Layers), nil
}

// copyXattrs gives dst every xattr of src.
func (o *op) copyXattrs(src, dst uint64) error {
	p := xattrPrefix(src)
	return scan(o.ctx, o.tx, p, prefixEnd(p), func(k, v []byte) error {
		o.tx.Set(xattrKey(dst, string(k[len(p):])), v)
		return nil
	})
}

// ShareInto gives dst, an empty file open for writing by session s only,
// the bytes of src without copying them (copy_file_range of a whole file
// into a new one): dst reads through src's layers (src's own chunks frozen
// first) and takes its length and layout; its writer must reopen its view. dst must be empty with no layers, and the
// session's writer must not have written to it (its chunks would lie over
// the layers); another writer of dst or any writer of src is EBUSY. A retry
// of ReqID returns dst as the first attempt left it.
func (n *Namespace) ShareInto(ctx context.Context, req RequestID, src uint64, s Session) (Inode, error) {
	var data uint64
	err := n.updateIdem(ctx, req.orNew(), opShareInto, func(o *op) error {
		if src == s.Ino {
			return fail(ErrInvalid, "share inode %d into itself", src)
		}
		dst, err := o.inode(s.Ino)
		if err != nil {
			return err
		}
		switch {
		case dst.Type != TypeFile:
			return fail(ErrInvalid, "share into a %s", dst.Type)
		case dst.Length != 0 || len(dst.Layers) != 0:
			return fail(ErrInvalid, "share into inode %d of %d bytes", dst.ID, dst.Length)
		}
		if err := o.changeable(dst); err != nil {
			return err
		}
		if _, open, err := o.tx.Get(o.ctx, sessionKey(s.Ino, s.ID)); err != nil {
			return err
		} else if !open {
			return fail(ErrInvalid, "session of inode %d is not open", s.Ino)
		}
		p := sessionPrefix(s.Ino)
		res, err := o.tx.GetRange(o.ctx, p, prefixEnd(p), kv.RangeOptions{Limit: 2})
		if err != nil {
			return err
		}
		if len(res.KVs) > 1 {
			return fail(ErrBusy, "inode %d has another writer", s.Ino)
		}
		in, err := o.inode(src)
		if err != nil {
			return err
		}
		switch {
		case in.Type != TypeFile:
			return fail(ErrInvalid, "share of a %s", in.Type)
		case in.Length == 0:
			return nil
		case in.InlineLen > 0:
			// A writer's file takes no inline bytes: its data is chunks.
			return fail(ErrInvalid, "inode %d keeps its data in the inode: copy its bytes", src)
		}
		// The clone's steps on an existing file: freeze, reference, adopt.
		tmp, err := o.shareOf(in, &data)
		if err != nil {
			return err
		}
		// dst holds no byte yet, so it takes src's layout too: a file and
		// its layers must agree on where each chunk lives.
		dst.Layers, dst.Layout, dst.StripeHint = tmp, in.Layout, in.StripeHint
		o.setLength(dst, in.Length)
		dst.Gen++
		dst.Mtime, dst.Ctime = o.now, o.now
		o.putInode(dst)
		return nil
	})
	if err != nil {
		return Inode{}, fmt.Errorf("share %d into %d: %w", src, s.Ino, err)
	}
	return n.Stat(ctx, s.Ino)
}
