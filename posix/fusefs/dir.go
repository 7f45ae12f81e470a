package fusefs

import (
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// renameWhiteout is RENAME_WHITEOUT, which only overlay file systems use.
const renameWhiteout = 4

// readDirPage is how many entries one metad call lists.
const readDirPage = 512

func (f *fileSystem) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	if st, ok := f.virtRefuse(in.NodeId, name); ok {
		return st
	}
	if len(name) > maxName {
		return fuse.Status(syscall.ENAMETOOLONG)
	}
	ctx, done := f.ctx(cancel)
	defer done()
	c := creds(&in.InHeader)
	c.Umask = in.Umask // the kernel leaves it to metad (CAP_DONT_MASK)
	defer f.forgetAttrs(in.NodeId)
	ino, err := f.meta.Mkdir(ctx, in.NodeId, name, in.Mode&07777, c)
	if err != nil {
		return f.status(ctx, "mkdir", err)
	}
	f.noteDirAttr(ino)
	f.fillEntry(ino, out)
	return fuse.OK
}

func (f *fileSystem) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if h.NodeId == virtDirID {
		return f.virtUnlink(h, name)
	}
	if st, ok := f.virtRefuse(h.NodeId, name); ok {
		return st
	}
	ctx, done := f.ctx(cancel)
	defer done()
	c, err := f.meta.UnlinkChange(ctx, metaapi.RemoveReq{Parent: h.NodeId, Name: name})
	f.followChange(c, err, h.NodeId)
	return f.status(ctx, "unlink", err)
}

func (f *fileSystem) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if st, ok := f.virtRefuse(h.NodeId, name); ok {
		return st
	}
	ctx, done := f.ctx(cancel)
	defer done()
	// The removed directory's own attributes go too; its id is not known.
	defer f.followChange(metaapi.ChangeResp{Subdirs: true}, nil)
	return f.status(ctx, "rmdir", f.meta.Rmdir(ctx, h.NodeId, name))
}

func (f *fileSystem) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	if st, ok := f.virtRefuse(in.NodeId, oldName); ok {
		return st
	}
	if st, ok := f.virtRefuse(in.Newdir, newName); ok {
		return st
	}
	if in.Flags&renameWhiteout != 0 || in.Flags&^(metaapi.RenameNoReplace|metaapi.RenameExchange|renameWhiteout) != 0 {
		return fuse.EINVAL
	}
	if len(newName) > maxName {
		return fuse.Status(syscall.ENAMETOOLONG)
	}
	ctx, done := f.ctx(cancel)
	defer done()
	c, err := f.meta.RenameChange(ctx, metaapi.RenameReq{SrcParent: in.NodeId, SrcName: oldName, DstParent: in.Newdir, DstName: newName, Flags: in.Flags})
	f.followChange(c, err, in.NodeId, in.Newdir)
	return f.status(ctx, "rename", err)
}

func (f *fileSystem) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	if st, ok := f.virtRefuse(in.NodeId, name); ok {
		return st
	}
	if isVirt(in.Oldnodeid) {
		return fuse.EPERM
	}
	if len(name) > maxName {
		return fuse.Status(syscall.ENAMETOOLONG)
	}
	ctx, done := f.ctx(cancel)
	defer done()
	defer f.forgetAttrs(in.Oldnodeid, in.NodeId)
	ino, err := f.meta.Link(ctx, in.Oldnodeid, in.NodeId, name)
	if err != nil {
		return f.status(ctx, "link", err)
	}
	f.fillEntry(ino, out)
	return fuse.OK
}

func (f *fileSystem) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	if h.NodeId == virtDirID {
		return f.virtSymlink(h, target, name, out)
	}
	if st, ok := f.virtRefuse(h.NodeId, name); ok {
		return st
	}
	if len(name) > maxName {
		return fuse.Status(syscall.ENAMETOOLONG)
	}
	ctx, done := f.ctx(cancel)
	defer done()
	defer f.forgetAttrs(h.NodeId)
	ino, err := f.meta.Symlink(ctx, h.NodeId, name, target, creds(h))
	if err != nil {
		return f.status(ctx, "symlink", err)
	}
	f.fillEntry(ino, out)
	return fuse.OK
}

func (f *fileSystem) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	if isVirt(h.NodeId) {
		return f.virtReadlink(h.NodeId)
	}
	ctx, done := f.ctx(cancel)
	defer done()
	target, err := f.meta.Readlink(ctx, h.NodeId)
	if err != nil {
		return nil, f.status(ctx, "readlink", err)
	}
	return []byte(target), fuse.OK
}

// dirHandle is an open directory: the listing read so far, in name order,
// so a readdir offset is a position in it and survives the kernel's
// re-reads. Offsets 0 and 1 are "." and "..".
type dirHandle struct {
	mu      sync.Mutex
	ino     uint64
	entries []metaapi.DirEntry
	more    bool // metad has entries after the last one held
	started bool
	virt    bool
	vers    *versNode // a directory of the old versions' view
}

func (f *fileSystem) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	dh := &dirHandle{ino: in.NodeId, virt: in.NodeId == virtDirID}
	if isVersNode(in.NodeId) {
		n, ok := f.vers.node(in.NodeId)
		switch {
		case !ok:
			return fuse.Status(syscall.ESTALE)
		case n.kind == versFile:
			return fuse.ENOTDIR
		}
		dh.vers = &n
	} else if isVirt(in.NodeId) && !dh.virt {
		return fuse.ENOTDIR
	}
	f.mu.Lock()
	f.nextFH++
	out.Fh = f.nextFH
	f.dirs[out.Fh] = dh
	f.mu.Unlock()
	return fuse.OK
}

func (f *fileSystem) ReleaseDir(in *fuse.ReleaseIn) {
	f.mu.Lock()
	delete(f.dirs, in.Fh)
	f.mu.Unlock()
}

// FsyncDir makes the directory's changes durable: every namespace change
// this mount made before it (the store has one log).
func (f *fileSystem) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	ctx, done := f.ctx(cancel)
	defer done()
	return f.status(ctx, "fsyncdir", f.meta.Sync(ctx))
}

func (f *fileSystem) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return f.readDir(cancel, in, out, false)
}

func (f *fileSystem) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return f.readDir(cancel, in, out, true)
}

func (f *fileSystem) readDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	f.mu.Lock()
	dh := f.dirs[in.Fh]
	f.mu.Unlock()
	if dh == nil {
		return fuse.EBADF
	}
	dh.mu.Lock()
	defer dh.mu.Unlock()
	if in.Offset == 0 || !dh.started {
		// First read or rewinddir: list afresh.
		dh.entries, dh.more, dh.started = nil, true, true
		if dh.virt {
			dh.entries, dh.more = f.virtEntries(), false
		}
	}
	ctx, done := f.ctx(cancel)
	defer done()
	if dh.vers != nil && dh.more {
		ents, err := f.versEntries(ctx, *dh.vers)
		if err != nil {
			return f.status(ctx, "readdir", err)
		}
		dh.entries, dh.more = ents, false
	}
	for pos := in.Offset; ; pos++ {
		var e fuse.DirEntry
		var ino *metaapi.Inode
		switch pos {
		case 0:
			e = fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Ino: dh.ino}
		case 1:
			e = fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR}
		default:
			i := int(pos - 2)
			for i >= len(dh.entries) && dh.more {
				after := ""
				if n := len(dh.entries); n > 0 {
					after = dh.entries[n-1].Name
				}
				page, more, err := f.meta.ReadDir(ctx, dh.ino, after, readDirPage, plus)
				if err != nil {
					return f.status(ctx, "readdir", err)
				}
				dh.entries = append(dh.entries, page...)
				dh.more = more && len(page) > 0
			}
			if i >= len(dh.entries) {
				return fuse.OK
			}
			de := dh.entries[i]
			e = fuse.DirEntry{Name: de.Name, Mode: typeMode(de.Type), Ino: de.Ino}
			ino = de.Inode
		}
		e.Off = pos + 1
		if !plus {
			if !out.AddDirEntry(e) {
				return fuse.OK
			}
			continue
		}
		eo := out.AddDirLookupEntry(e)
		if eo == nil {
			return fuse.OK
		}
		if ino != nil && !dh.virt && dh.vers == nil {
			f.fillEntry(*ino, eo)
		}
	}
}

// typeMode is the S_IFMT bits of an inode type.
func typeMode(t metaapi.Type) uint32 {
	switch t {
	case metaapi.TypeDir:
		return syscall.S_IFDIR
	case metaapi.TypeSymlink:
		return syscall.S_IFLNK
	case metaapi.TypeFifo:
		return syscall.S_IFIFO
	case metaapi.TypeSocket:
		return syscall.S_IFSOCK
	case metaapi.TypeCharDev:
		return syscall.S_IFCHR
	case metaapi.TypeBlockDev:
		return syscall.S_IFBLK
	}
	return syscall.S_IFREG
}
