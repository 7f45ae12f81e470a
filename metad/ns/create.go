package ns

import (
	"context"
	"fmt"
	"syscall"
)

// MaxLinks bounds a file's hard links.
const MaxLinks = 65535

// CreateRequest creates (or, without Exclusive, opens) a regular file.
type CreateRequest struct {
	ReqID     RequestID
	Parent    uint64
	Name      string
	Mode      uint32 // permission bits
	UID, GID  uint32
	Umask     uint32   // applied unless the parent has a default ACL
	Layout    *Layout  // nil: the parent's default layout
	Exclusive bool     // O_EXCL: an existing name is EEXIST
	Truncate  bool     // O_TRUNC: truncate an existing file to 0
	Write     bool     // open for writing: also open a write session
	Client    ClientID // the session's owner, with Write
}

// CreateResult is Create's answer. Session is set when Write was.
type CreateResult struct {
	Inode   Inode
	Created bool // false: an existing file was opened
	Session *Session
}

// Create creates a regular file in one transaction: conflict-tracked reads of
// the parent inode (it must stay a live directory) and of the new dentry (the
// name must stay free); the parent inode is not written, so creates in one
// directory do not conflict. With Exclusive an existing name fails with
// EEXIST; otherwise an existing file is opened (EISDIR for a directory; EEXIST
// for a symlink: the caller resolves symlinks first). A retry that finds the
// dentry stamped with its ReqID returns that file as created.
func (n *Namespace) Create(ctx context.Context, req CreateRequest) (CreateResult, error) {
	if err := checkName(req.Name); err != nil {
		return CreateResult{}, err
	}
	req.ReqID = req.ReqID.orNew()
	sid := NewSessionID() // one per call: retries find the session they wrote
	var id uint64         // allocated once, reused by retries
	var res CreateResult
	err := n.update(ctx, func(o *op) error {
		res = CreateResult{}
		d, found, err := o.dentry(req.Parent, req.Name)
		if err != nil {
			return err
		}
		var in *Inode
		if found {
			if in, err = o.inode(d.Ino); err != nil {
				return err
			}
			switch {
			case d.ReqID == req.ReqID && in.Type != TypeFile:
				return fail(ErrInvalid, "request %s created a %s", req.ReqID, in.Type)
			case d.ReqID == req.ReqID: // our own earlier attempt committed
				res.Created = true
			case req.Exclusive:
				return fail(ErrExist, "create %q in %d", req.Name, req.Parent)
			case in.Type == TypeDir:
				return fail(ErrIsDir, "create %q in %d", req.Name, req.Parent)
			case in.Type != TypeFile:
				return fail(ErrExist, "create %q in %d: a %s", req.Name, req.Parent, in.Type)
			case req.Truncate:
				if err := o.changeable(in); err != nil {
					return err
				}
				if o.truncate(in, 0) {
					o.putInode(in)
				}
			}
		} else {
			p, err := o.liveDir(req.Parent)
			if err != nil {
				return err
			}
			if err := o.newID(&id); err != nil {
				return err
			}
			layout := inheritLayout(p, req.Layout)
			if o.n.opts.NewFileLayout != nil {
				layout = o.n.opts.NewFileLayout(layout, id)
			}
			mode, gid := inheritGroup(p, req.Mode, req.GID, false)
			in = &Inode{ID: id, Type: TypeFile, Mode: mode, UID: req.UID, GID: gid,
				Atime: o.now, Mtime: o.now, Ctime: o.now, Nlink: 1,
				Layout: layout, StripeHint: initialStripeHint(layout)}
			if err := o.inheritACL(p, in, req.Umask); err != nil {
				return err
			}
			if err := o.versionedCreate(req.Parent, req.Name, in); err != nil {
				return err
			}
			o.createInode(in)
			o.putDentry(req.Parent, req.Name, &Dentry{Ino: id, Type: TypeFile, ReqID: req.ReqID})
			res.Created = true
		}
		if req.Write {
			if err := o.changeable(in); err != nil {
				return err
			}
			s, err := o.openSession(in, sid, req.Client, req.Parent, req.Name)
			if err != nil {
				return err
			}
			res.Session = s
		}
		res.Inode = *in
		return nil
	})
	if err != nil {
		return CreateResult{}, fmt.Errorf("create %q: %w", req.Name, err)
	}
	return res, nil
}

// inheritGroup is the mode and group of a new entry of parent made by a
// caller of group gid: in a set-group-id directory it takes the directory's
// group, and a new directory is set-group-id too (the kernel already took the
// bit off a new file's mode where its creator may not have it).
func inheritGroup(parent *Inode, mode, gid uint32, dir bool) (uint32, uint32) {
	mode &= 07777
	if parent.Mode&syscall.S_ISGID == 0 {
		return mode, gid
	}
	if dir {
		mode |= syscall.S_ISGID
	}
	return mode, parent.GID
}

func inheritLayout(parent *Inode, given *Layout) Layout {
	switch {
	case given != nil:
		return *given
	case parent.DefaultLayout != nil:
		return *parent.DefaultLayout
	}
	return Layout{}
}

// newID sets *id to a fresh inode id unless an earlier attempt already did,
// and checks that no inode has it (a duplicate would merge two files; cheap
// insurance against a misconfigured allocator, as in 3FS).
func (o *op) newID(id *uint64) error {
	for tries := 0; ; tries++ {
		if *id == 0 {
			v, err := o.n.alloc.id(o.ctx)
			if err != nil {
				return err
			}
			*id = v
		}
		_, found, err := o.tx.SnapshotGet(o.ctx, inodeKey(*id))
		if err != nil {
			return err
		}
		if !found {
			return nil
		}
		if tries > 3 {
			return fail(ErrIO, "inode id %d already in use", *id)
		}
		*id = 0 // e.g. an earlier attempt used it and the file is gone again
	}
}

// MkdirRequest creates a directory.
type MkdirRequest struct {
	ReqID    RequestID
	Parent   uint64
	Name     string
	Mode     uint32
	UID, GID uint32
	Umask    uint32  // as CreateRequest\'s
	Layout   *Layout // default layout for children; nil: the parent's
}

// Mkdir creates a directory (EEXIST if the name is taken). Conflicts as Create.
func (n *Namespace) Mkdir(ctx context.Context, req MkdirRequest) (Inode, error) {
	if err := checkName(req.Name); err != nil {
		return Inode{}, err
	}
	req.ReqID = req.ReqID.orNew()
	var id uint64
	var res *Inode
	err := n.update(ctx, func(o *op) error {
		if d, err := o.retried(req.Parent, req.Name, req.ReqID, "mkdir"); err != nil || d != nil {
			if err != nil {
				return err
			}
			if err := o.own(d, TypeDir, &res); err != nil {
				return err
			}
			return dirView(o.ctx, o.tx, res)
		}
		p, err := o.liveDir(req.Parent)
		if err != nil {
			return err
		}
		if err := o.newID(&id); err != nil {
			return err
		}
		in, err := o.mkdir(p, id, req.Name, req.Mode, req.UID, req.GID, req.Umask, req.Layout, req.ReqID)
		if err != nil {
			return err
		}
		res = ptr(newDirView(in))
		return nil
	})
	if err != nil {
		return Inode{}, fmt.Errorf("mkdir %q: %w", req.Name, err)
	}
	return *res, nil
}

// mkdir writes a new directory inode and its dentry in p, and counts it
// among p's subdirectories.
func (o *op) mkdir(p *Inode, id uint64, name string, mode, uid, gid, umask uint32, layout *Layout, req RequestID) (*Inode, error) {
	l := inheritLayout(p, layout)
	mode, gid = inheritGroup(p, mode, gid, true)
	in := &Inode{ID: id, Type: TypeDir, Mode: mode, UID: uid, GID: gid, CountsSubdirs: true,
		Atime: o.now, Mtime: o.now, Ctime: o.now, Nlink: 1, Parent: p.ID, Name: name, DefaultLayout: &l}
	if err := o.inheritACL(p, in, umask); err != nil {
		return nil, err
	}
	o.createInode(in)
	o.putDentry(p.ID, name, &Dentry{Ino: id, Type: TypeDir, ReqID: req})
	return in, o.addSubdir(p.ID, id, 1)
}

// MkdirAllRequest creates a directory and any missing parents (mkdir -p).
type MkdirAllRequest struct {
	ReqID    RequestID
	Path     string
	Mode     uint32
	UID, GID uint32
	Layout   *Layout
	Implicit bool // mark the directories it creates Implicit
}

// MkdirAll creates every missing directory of Path in ONE transaction and
// returns the last one; existing directories (also through symlinks) are fine,
// an existing non-directory is ENOTDIR (EEXIST for the last component). The
// existing prefix is walked with snapshot reads; the deepest existing directory
// and the first missing name are conflict-tracked, as in Mkdir.
func (n *Namespace) MkdirAll(ctx context.Context, req MkdirAllRequest) (Inode, error) {
	if len(req.Path) > MaxPathLen {
		return Inode{}, fail(ErrNameTooLong, "mkdir -p of %d bytes", len(req.Path))
	}
	req.ReqID = req.ReqID.orNew()
	var ids []uint64
	var res *Inode
	err := n.update(ctx, func(o *op) error {
		w := walker{ctx: o.ctx, tx: o.tx}
		cur, err := getInode(o.ctx, o.tx, RootID, true)
		if err != nil {
			return err
		}
		comps := splitPath(req.Path)
		i := 0
	walk:
		for ; i < len(comps); i++ {
			c := comps[i]
			var next *Inode
			switch c {
			case ".":
				continue
			case "..":
				next, err = getInode(o.ctx, o.tx, cur.Parent, true)
			default:
				if len(c) > MaxNameLen {
					return fail(ErrNameTooLong, "component of %d bytes", len(c))
				}
				var d *Dentry
				var found bool
				if d, found, err = getDentry(o.ctx, o.tx, cur.ID, c, true); err != nil {
					return err
				}
				if !found {
					break walk
				}
				next, err = getInode(o.ctx, o.tx, d.Ino, true)
				if err == nil && next.Type == TypeSymlink {
					next, err = w.walk(cur.ID, next.Target, true)
				}
			}
			if err != nil {
				return err
			}
			if next.Type != TypeDir {
				if i == len(comps)-1 {
					return fail(ErrExist, "%q is a %s", c, next.Type)
				}
				return fail(ErrNotDir, "%q is a %s", c, next.Type)
			}
			cur = next
		}
		if i == len(comps) {
			res = cur
			return dirView(o.ctx, o.tx, res)
		}
		missing := comps[i:]
		for _, c := range missing {
			if err := checkName(c); err != nil {
				if c == "." || c == ".." {
					return fail(ErrNotExist, "%q after a missing directory", c)
				}
				return err
			}
		}
		p, err := o.liveDir(cur.ID)
		if err != nil {
			return err
		}
		if _, found, err := o.dentry(cur.ID, missing[0]); err != nil || found {
			if found { // impossible: the snapshot read at the same version missed it
				err = fail(ErrIO, "dentry %q appeared", missing[0])
			}
			return err
		}
		for k, c := range missing {
			if k == len(ids) {
				ids = append(ids, 0)
			}
			if err := o.newID(&ids[k]); err != nil {
				return err
			}
			if p, err = o.mkdir(p, ids[k], c, req.Mode, req.UID, req.GID, 0, req.Layout, req.ReqID); err != nil {
				return err
			}
			if req.Implicit {
				p.Implicit = true
				o.putInode(p)
			}
		}
		res = ptr(newDirView(p))
		return nil
	})
	if err != nil {
		return Inode{}, fmt.Errorf("mkdir -p %q: %w", req.Path, err)
	}
	return *res, nil
}

// SymlinkRequest creates a symbolic link.
type SymlinkRequest struct {
	ReqID    RequestID
	Parent   uint64
	Name     string
	Target   string
	UID, GID uint32
}

// Symlink creates a symlink (EEXIST if the name is taken). Conflicts as Create.
func (n *Namespace) Symlink(ctx context.Context, req SymlinkRequest) (Inode, error) {
	if err := checkName(req.Name); err != nil {
		return Inode{}, err
	}
	switch {
	case req.Target == "":
		return Inode{}, fail(ErrNotExist, "symlink with an empty target")
	case len(req.Target) > MaxPathLen:
		return Inode{}, fail(ErrNameTooLong, "symlink target of %d bytes", len(req.Target))
	}
	req.ReqID = req.ReqID.orNew()
	var id uint64
	var res *Inode
	err := n.update(ctx, func(o *op) error {
		if d, err := o.retried(req.Parent, req.Name, req.ReqID, "symlink"); err != nil || d != nil {
			if err != nil {
				return err
			}
			return o.own(d, TypeSymlink, &res)
		}
		p, err := o.liveDir(req.Parent)
		if err != nil {
			return err
		}
		if err := o.newID(&id); err != nil {
			return err
		}
		_, gid := inheritGroup(p, 0, req.GID, false)
		res = &Inode{ID: id, Type: TypeSymlink, Mode: 0o777, UID: req.UID, GID: gid,
			Atime: o.now, Mtime: o.now, Ctime: o.now, Nlink: 1, Target: req.Target}
		o.createInode(res)
		o.putDentry(req.Parent, req.Name, &Dentry{Ino: id, Type: TypeSymlink, ReqID: req.ReqID})
		return nil
	})
	if err != nil {
		return Inode{}, fmt.Errorf("symlink %q: %w", req.Name, err)
	}
	return *res, nil
}

// MknodRequest creates a special file.
type MknodRequest struct {
	ReqID    RequestID
	Parent   uint64
	Name     string
	Type     InodeType // TypeFifo, TypeSocket, TypeCharDev or TypeBlockDev
	Mode     uint32    // permission bits
	Rdev     uint32    // a device's number (Inode.Rdev); ignored for fifos and sockets
	UID, GID uint32
	Umask    uint32 // as CreateRequest\'s
}

// Mknod creates a fifo, a socket or a device (EEXIST if the name is taken;
// EINVAL for another type). The namespace keeps only the inode: the kernel
// of whoever opens it carries the data. Conflicts as Create.
func (n *Namespace) Mknod(ctx context.Context, req MknodRequest) (Inode, error) {
	if err := checkName(req.Name); err != nil {
		return Inode{}, err
	}
	if !req.Type.Special() {
		return Inode{}, fail(ErrInvalid, "mknod of a %s", req.Type)
	}
	if !req.Type.Device() {
		req.Rdev = 0
	}
	req.ReqID = req.ReqID.orNew()
	var id uint64
	var res *Inode
	err := n.update(ctx, func(o *op) error {
		if d, err := o.retried(req.Parent, req.Name, req.ReqID, "mknod"); err != nil || d != nil {
			if err != nil {
				return err
			}
			return o.own(d, req.Type, &res)
		}
		p, err := o.liveDir(req.Parent)
		if err != nil {
			return err
		}
		if err := o.newID(&id); err != nil {
			return err
		}
		mode, gid := inheritGroup(p, req.Mode, req.GID, false)
		res = &Inode{ID: id, Type: req.Type, Mode: mode, UID: req.UID, GID: gid,
			Atime: o.now, Mtime: o.now, Ctime: o.now, Nlink: 1, Rdev: req.Rdev}
		if err := o.inheritACL(p, res, req.Umask); err != nil {
			return err
		}
		o.createInode(res)
		o.putDentry(req.Parent, req.Name, &Dentry{Ino: id, Type: req.Type, ReqID: req.ReqID})
		return nil
	})
	if err != nil {
		return Inode{}, fmt.Errorf("mknod %q: %w", req.Name, err)
	}
	return *res, nil
}

// LinkRequest adds a hard link NewParent/NewName to inode Ino.
type LinkRequest struct {
	ReqID     RequestID
	Ino       uint64
	NewParent uint64
	NewName   string
}

// Link adds a hard link to anything but a directory (EPERM for one, ENOENT
// for a removed inode, EMLINK past MaxLinks, EEXIST if the name is taken).
// Conflict-tracked: the new dentry, the new parent inode, and the target inode
// (read-modify-written: nlink++).
func (n *Namespace) Link(ctx context.Context, req LinkRequest) (Inode, error) {
	if err := checkName(req.NewName); err != nil {
		return Inode{}, err
	}
	req.ReqID = req.ReqID.orNew()
	var res *Inode
	err := n.update(ctx, func(o *op) error {
		if d, err := o.retried(req.NewParent, req.NewName, req.ReqID, "link"); err != nil || d != nil {
			if err != nil {
				return err
			}
			if d.Ino != req.Ino {
				return fail(ErrInvalid, "request %s linked another inode", req.ReqID)
			}
			res, err = o.inode(d.Ino)
			return err
		}
		in, err := o.inode(req.Ino)
		if err != nil {
			return err
		}
		switch {
		case in.Type == TypeDir:
			return fail(ErrPerm, "hard link to directory %d", req.Ino)
		case in.Nlink == 0:
			return fail(ErrNotExist, "inode %d was removed", req.Ino)
		case in.Nlink >= MaxLinks:
			return fail(ErrMLink, "inode %d has %d links", req.Ino, in.Nlink)
		}
		if err := o.writable(in); err != nil {
			return err
		}
		if _, err := o.liveDir(req.NewParent); err != nil {
			return err
		}
		in.Nlink++
		in.Ctime = o.now
		o.putInode(in)
		o.putDentry(req.NewParent, req.NewName, &Dentry{Ino: in.ID, Type: in.Type, ReqID: req.ReqID})
		res = in
		return nil
	})
	if err != nil {
		return Inode{}, fmt.Errorf("link %q: %w", req.NewName, err)
	}
	return *res, nil
}

// own returns the inode of a dentry that this request created in an earlier
// attempt, checking it is of the kind the request creates (a request id reused
// for another operation is refused, not answered).
// retried looks name up in parent for an operation that creates it: absent
// gives (nil, nil); made by this very request (a retry after an unknown
// commit) gives its dentry, to answer with; made by anyone else is EEXIST.
func (o *op) retried(parent uint64, name string, req RequestID, what string) (*Dentry, error) {
	d, found, err := o.dentry(parent, name)
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, nil
	case d.ReqID != req:
		return nil, fail(ErrExist, "%s %q in %d", what, name, parent)
	}
	return d, nil
}

func (o *op) own(d *Dentry, want InodeType, res **Inode) error {
	in, err := o.inode(d.Ino)
	if err != nil {
		return err
	}
	if in.Type != want {
		return fail(ErrInvalid, "request %s created a %s", d.ReqID, in.Type)
	}
	*res = in
	return nil
}
