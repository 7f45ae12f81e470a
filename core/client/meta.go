package client

import (
	"context"
	"github.com/flyfs/flyfs/core/durability"
	"os"
	"syscall"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/layout"
)

// Meta is the inode-level face of the metadata service, for front ends that
// work on inodes (the FUSE mount, the S3 gateway, the console). Calls fail
// over between metad; mutations carry one request id over every retry, so a
// retried create, rename or unlink returns the first attempt's result.
type Meta struct{ fs *FS }

// Meta returns the inode-level metadata API.
func (fs *FS) Meta() *Meta { return &Meta{fs: fs} }

// Creds are the caller's ids, stamped as owner on what it creates.
type Creds struct {
	UID, GID uint32
	// Umask is the creator's, for creates (a mount passes the kernel's):
	// applied unless the parent has a default ACL, which takes its place.
	Umask uint32
}

func inodeOf(r *metaapi.InodeResp, err error) (metaapi.Inode, error) {
	if err != nil {
		return metaapi.Inode{}, err
	}
	return r.Inode, nil
}

// Stat returns inode ino.
func (m *Meta) Stat(ctx context.Context, ino uint64) (metaapi.Inode, error) {
	return inodeOf(callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.Stat(ctx, ino) }))
}

// Lookup returns the inode named name in directory parent.
func (m *Meta) Lookup(ctx context.Context, parent uint64, name string) (metaapi.Inode, error) {
	req := &metaapi.LookupReq{Parent: parent, Name: name}
	return inodeOf(callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.Lookup(ctx, req) }))
}

// ResolveRead is Resolve for a reader of the file: the answer carries an
// inline file's bytes (OpenInode of it needs no open call to read them) and
// the value of extended attribute xattr (found false: none), from one
// snapshot.
func (m *Meta) ResolveRead(ctx context.Context, path string, followLast bool, xattr string) (in metaapi.Inode, value []byte, found bool, err error) {
	req := &metaapi.ResolveReq{Path: path, FollowLast: followLast, WithInline: true, Xattr: xattr}
	r, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.Resolve(ctx, req) })
	if err != nil {
		return metaapi.Inode{}, nil, false, err
	}
	return r.Inode, r.Xattr, r.HasXattr, nil
}

// Resolve walks an absolute path (symlinks inside it are followed; the last
// component only with followLast).
func (m *Meta) Resolve(ctx context.Context, path string, followLast bool) (metaapi.Inode, error) {
	req := &metaapi.ResolveReq{Path: path, FollowLast: followLast}
	return inodeOf(callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.Resolve(ctx, req) }))
}

// Create creates a file (or opens an existing one without O_EXCL) with
// open(2) flags; a write open returns a session for OpenInode.
func (m *Meta) Create(ctx context.Context, parent uint64, name string, mode uint32, flags int, cr Creds) (in metaapi.Inode, session []byte, created bool, err error) {
	req := &metaapi.CreateReq{ReqID: newReqID(), Parent: parent, Name: name, Mode: mode,
		Exclusive: flags&os.O_EXCL != 0, Truncate: flags&os.O_TRUNC != 0, Write: writeFlags(flags),
		Client: m.fs.clientID, UID: cr.UID, GID: cr.GID, Umask: cr.Umask}
	r, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.CreateResp, error) { return c.Create(ctx, req) })
	if err != nil {
		return metaapi.Inode{}, nil, false, err
	}
	if req.Truncate && !r.Created {
		// metad cut the length; the old chunks must go too, or a later
		// extension (and length settling) would find the old bytes.
		if err := m.fs.dropChunksPast(ctx, r.Inode, 0); err != nil {
			return metaapi.Inode{}, nil, false, err
		}
	}
	return r.Inode, r.Session, r.Created, nil
}

func writeFlags(flags int) bool { return flags&(os.O_WRONLY|os.O_RDWR) != 0 }

// Open opens inode ino with open(2) flags (O_TRUNC truncates); a write open
// returns a session.
func (m *Meta) Open(ctx context.Context, ino uint64, flags int, cr Creds) (metaapi.Inode, []byte, error) {
	req := &metaapi.OpenReq{Ino: ino, Flags: flags, Client: m.fs.clientID}
	read := flags&(syscall.O_ACCMODE|syscall.O_TRUNC) == syscall.O_RDONLY
	held, ok := inlineCopy{}, false
	if read {
		if held, ok = m.fs.inlines.get(ino); ok {
			req.KnownGen = held.gen
		}
	}
	r, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.OpenResp, error) { return c.Open(ctx, req) })
	if err != nil {
		return metaapi.Inode{}, nil, err
	}
	if read {
		if ok && r.Inode.InlineOmitted && r.Inode.Gen == held.gen { // left out: we hold them
			r.Inode.Inline, r.Inode.InlineOmitted = held.data, false
		}
		m.fs.inlines.note(r.Inode)
	}
	if flags&os.O_TRUNC != 0 && r.Inode.Type == metaapi.TypeFile {
		if err := m.fs.dropChunksPast(ctx, r.Inode, 0); err != nil { // as in Create
			return metaapi.Inode{}, nil, err
		}
	}
	return r.Inode, r.Session, nil
}

// Mkdir creates a directory.
func (m *Meta) Mkdir(ctx context.Context, parent uint64, name string, mode uint32, cr Creds) (metaapi.Inode, error) {
	req := &metaapi.MkdirReq{ReqID: newReqID(), Parent: parent, Name: name, Mode: mode, UID: cr.UID, GID: cr.GID, Umask: cr.Umask}
	return inodeOf(callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.Mkdir(ctx, req) }))
}

// MkdirAll creates every missing directory of path in one transaction;
// implicit marks the new ones as made by a nested S3 PUT.
func (m *Meta) MkdirAll(ctx context.Context, path string, mode uint32, cr Creds, implicit bool) (metaapi.Inode, error) {
	req := &metaapi.MkdirAllReq{ReqID: newReqID(), Path: path, Mode: mode, UID: cr.UID, GID: cr.GID, Implicit: implicit}
	return inodeOf(callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.MkdirAll(ctx, req) }))
}

// Symlink creates a symbolic link.
func (m *Meta) Symlink(ctx context.Context, parent uint64, name, target string, cr Creds) (metaapi.Inode, error) {
	req := &metaapi.SymlinkReq{ReqID: newReqID(), Parent: parent, Name: name, Target: target, UID: cr.UID, GID: cr.GID}
	return inodeOf(callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.Symlink(ctx, req) }))
}

// Mknod creates a special file: typ is a fifo, a socket or a device (with
// its number rdev, as Inode.Rdev).
func (m *Meta) Mknod(ctx context.Context, parent uint64, name string, typ metaapi.Type, mode, rdev uint32, cr Creds) (metaapi.Inode, error) {
	req := &metaapi.MknodReq{ReqID: newReqID(), Parent: parent, Name: name, Type: typ, Mode: mode, Rdev: rdev, UID: cr.UID, GID: cr.GID, Umask: cr.Umask}
	return inodeOf(callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.Mknod(ctx, req) }))
}

// Readlink returns a symlink's target.
func (m *Meta) Readlink(ctx context.Context, ino uint64) (string, error) {
	in, err := inodeOf(callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.Readlink(ctx, ino) }))
	return in.Target, err
}

// Link adds a hard link.
func (m *Meta) Link(ctx context.Context, ino, newParent uint64, newName string) (metaapi.Inode, error) {
	req := &metaapi.LinkReq{ReqID: newReqID(), Ino: ino, NewParent: newParent, NewName: newName}
	return inodeOf(callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.Link(ctx, req) }))
}

// Unlink removes a file or symlink name (conditions and pruning in req).
func (m *Meta) Unlink(ctx context.Context, req metaapi.RemoveReq) error {
	_, err := m.UnlinkChange(ctx, req)
	return err
}

// UnlinkChange is Unlink, answering how the parent changed.
func (m *Meta) UnlinkChange(ctx context.Context, req metaapi.RemoveReq) (metaapi.ChangeResp, error) {
	req.ReqID = newReqID()
	r, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.ChangeResp, error) { return c.Unlink(ctx, &req) })
	if err != nil {
		return metaapi.ChangeResp{}, err
	}
	return *r, nil
}

// Rmdir removes an empty directory.
func (m *Meta) Rmdir(ctx context.Context, parent uint64, name string) error {
	req := &metaapi.RemoveReq{ReqID: newReqID(), Parent: parent, Name: name}
	_, err := callMeta(ctx, m.fs, func(c metaapi.Client) (struct{}, error) { return struct{}{}, c.Rmdir(ctx, req) })
	return err
}

// RemoveAll removes a whole tree in one call; GC frees its contents later.
func (m *Meta) RemoveAll(ctx context.Context, parent uint64, name string) error {
	req := &metaapi.RemoveReq{ReqID: newReqID(), Parent: parent, Name: name}
	_, err := callMeta(ctx, m.fs, func(c metaapi.Client) (struct{}, error) { return struct{}{}, c.RemoveAll(ctx, req) })
	return err
}

// Rename moves an entry (flags and conditions in req).
func (m *Meta) Rename(ctx context.Context, req metaapi.RenameReq) error {
	_, err := m.RenameChange(ctx, req)
	return err
}

// RenameChange is Rename, answering how the two parents changed.
func (m *Meta) RenameChange(ctx context.Context, req metaapi.RenameReq) (metaapi.ChangeResp, error) {
	req.ReqID = newReqID()
	r, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.ChangeResp, error) { return c.Rename(ctx, &req) })
	if err != nil {
		return metaapi.ChangeResp{}, err
	}
	return *r, nil
}

// ReadDir returns up to limit entries of dir after the name after, in byte
// order of names, and whether more follow; plus also returns their inodes.
func (m *Meta) ReadDir(ctx context.Context, dir uint64, after string, limit int, plus bool) ([]metaapi.DirEntry, bool, error) {
	req := &metaapi.ReadDirReq{Dir: dir, After: after, Limit: limit, Plus: plus}
	r, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.ReadDirResp, error) { return c.ReadDir(ctx, req) })
	if err != nil {
		return nil, false, err
	}
	return r.Entries, r.More, nil
}

// ReadDirXattr is ReadDir with plus that also returns the extended attribute
// name of each entry (DirEntry.Xattr; nil where absent), in one call.
func (m *Meta) ReadDirXattr(ctx context.Context, dir uint64, after string, limit int, name string) ([]metaapi.DirEntry, bool, error) {
	req := &metaapi.ReadDirReq{Dir: dir, After: after, Limit: limit, Plus: true, Xattr: name}
	r, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.ReadDirResp, error) { return c.ReadDir(ctx, req) })
	if err != nil {
		return nil, false, err
	}
	return r.Entries, r.More, nil
}

// SetAttr changes the attributes in req.Mask.
func (m *Meta) SetAttr(ctx context.Context, ino uint64, req metaapi.SetAttrReq) (metaapi.Inode, error) {
	req.Ino = ino
	if req.Mask&metaapi.SetSize != 0 && req.Size > metaapi.MaxFileSize {
		return metaapi.Inode{}, syscall.EFBIG
	}
	if req.Mask&metaapi.SetSize != 0 {
		// Durable before chunks past the size are cut: a crash must not
		// bring back the old size over bytes that are gone.
		ctx = durability.Strict(ctx)
	}
	in, err := inodeOf(callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.SetAttr(ctx, &req) }))
	if err == nil && req.Mask&metaapi.SetSize != 0 {
		err = m.fs.dropChunksPast(ctx, in, req.Size)
	}
	return in, err
}

// Sync makes every namespace change acknowledged before it durable (calls
// made under rpc.Relaxed are acknowledged before).
func (m *Meta) Sync(ctx context.Context) error {
	_, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.Empty, error) { return &metaapi.Empty{}, c.Sync(ctx) })
	return err
}

// StatFS returns the namespace's usage.
func (m *Meta) StatFS(ctx context.Context) (metaapi.StatFSResp, error) {
	r, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.StatFSResp, error) { return c.StatFS(ctx) })
	if err != nil {
		return metaapi.StatFSResp{}, err
	}
	return *r, nil
}

// GetXattr returns an extended attribute (ENODATA if absent).
func (m *Meta) GetXattr(ctx context.Context, ino uint64, name string) ([]byte, error) {
	req := &metaapi.XattrReq{Ino: ino, Name: name}
	r, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.XattrResp, error) { return c.GetXattr(ctx, req) })
	if err != nil {
		return nil, err
	}
	if r.Value == nil {
		return []byte{}, nil
	}
	return r.Value, nil
}

// SetXattr sets an extended attribute (flags: XATTR_CREATE=1, XATTR_REPLACE=2).
func (m *Meta) SetXattr(ctx context.Context, ino uint64, name string, value []byte, flags int) error {
	req := &metaapi.XattrReq{Ino: ino, Name: name, Value: value, Flags: flags}
	_, err := callMeta(ctx, m.fs, func(c metaapi.Client) (struct{}, error) { return struct{}{}, c.SetXattr(ctx, req) })
	return err
}

// ListXattr lists the extended attribute names of ino.
func (m *Meta) ListXattr(ctx context.Context, ino uint64) ([]string, error) {
	req := &metaapi.XattrReq{Ino: ino}
	r, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.XattrResp, error) { return c.ListXattr(ctx, req) })
	if err != nil {
		return nil, err
	}
	return r.Names, nil
}

// RemoveXattr removes an extended attribute (ENODATA if absent).
func (m *Meta) RemoveXattr(ctx context.Context, ino uint64, name string) error {
	req := &metaapi.XattrReq{Ino: ino, Name: name}
	_, err := callMeta(ctx, m.fs, func(c metaapi.Client) (struct{}, error) { return struct{}{}, c.RemoveXattr(ctx, req) })
	return err
}

// SetLayout sets a directory's default layout for new children.
func (m *Meta) SetLayout(ctx context.Context, dir uint64, l layout.Layout) error {
	req := &metaapi.LayoutReq{Ino: dir, Layout: l}
	_, err := callMeta(ctx, m.fs, func(c metaapi.Client) (struct{}, error) { return struct{}{}, c.SetLayout(ctx, req) })
	return err
}

// GetLayout returns a file's layout or a directory's default layout.
func (m *Meta) GetLayout(ctx context.Context, ino uint64) (layout.Layout, error) {
	r, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.LayoutReq, error) { return c.GetLayout(ctx, ino) })
	if err != nil {
		return layout.Layout{}, err
	}
	return r.Layout, nil
}
