package fusefs

import (
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Directory attributes after this mount's own entry changes. The kernel
// drops a directory's cached attributes whenever one of its entries changes
// through this mount (create, unlink, rename), and its next permission check
// (default_permissions) asks for them again: one GETATTR after every such
// change. So the mount keeps the attributes metad last gave it for each
// directory (GETATTR, LOOKUP), for AttrTimeout from when it got them. A
// change here whose answer says when the directory changed (metad's
// ChangeResp, or a new file's ctime) moves their mtime and ctime to that
// time (metad reports the later of its inode's times and the last entry
// change's), and the next GETATTR is answered with them, as the kernel
// would have answered from its own cache had the change not dropped it.
// A change that moves a directory's link count (a directory made, removed
// or moved), one whose time is not known, and any change of the directory
// itself drop them.

type dirAttr struct {
	in      metaapi.Inode
	at      time.Time // when metad gave them
	changed bool      // moved by a change here: answer the next GETATTR
}

// noteDirAttr keeps in, fresh from metad, if it is a directory's.
func (f *fileSystem) noteDirAttr(in metaapi.Inode) {
	if in.Type != metaapi.TypeDir || f.opts.AttrTimeout <= 0 {
		return
	}
	f.mu.Lock()
	f.dirAttrs[in.ID] = dirAttr{in: in, at: time.Now()}
	f.mu.Unlock()
}

// dirChanged follows a change of an entry of dir made here at t (unix ns;
// 0: not known).
func (f *fileSystem) dirChanged(dir uint64, t int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.dirAttrs[dir]
	switch {
	case !ok:
	case t == 0 || time.Since(e.at) >= f.opts.AttrTimeout:
		delete(f.dirAttrs, dir)
	default:
		e.in.Mtime, e.in.Ctime = max(e.in.Mtime, t), max(e.in.Ctime, t)
		e.changed = true
		f.dirAttrs[dir] = e
	}
}

// followChange follows metad's answer to an unlink or rename here that
// changed the entries of dirs (err: it may have changed them, how is not
// known).
func (f *fileSystem) followChange(c metaapi.ChangeResp, err error, dirs ...uint64) {
	if err != nil || c.Subdirs {
		// A directory's link count moved, or a directory went: which
		// ones is not known here.
		f.mu.Lock()
		clear(f.dirAttrs)
		f.mu.Unlock()
		return
	}
	for _, d := range dirs {
		f.dirChanged(d, c.DirTime)
	}
}

// takeDirAttr returns the attributes of dir if a change here moved them and
// they may answer a GETATTR now.
func (f *fileSystem) takeDirAttr(dir uint64) (metaapi.Inode, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.dirAttrs[dir]
	if !ok || !e.changed {
		return metaapi.Inode{}, false
	}
	if time.Since(e.at) >= f.opts.AttrTimeout {
		delete(f.dirAttrs, dir)
		return metaapi.Inode{}, false
	}
	e.changed = false
	f.dirAttrs[dir] = e
	return e.in, true
}

// forgetDirAttrs drops what is kept of dirs: this mount changes them in a
// way it does not follow.
func (f *fileSystem) forgetDirAttrs(dirs ...uint64) {
	f.mu.Lock()
	for _, d := range dirs {
		delete(f.dirAttrs, d)
	}
	f.mu.Unlock()
}
