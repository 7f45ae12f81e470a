package fusefs

import (
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Attributes the mount answers itself. The kernel drops an inode's cached
// attributes whenever this mount changes it (a write to a file; an entry
// created, removed or renamed in a directory) and asks for them again at the
// next stat or, with default_permissions, the next permission check, though
// the mount has just learned them: a close brings a file's attributes back
// from metad, and metad answers an entry change with the time the directory
// changed at (ChangeResp; a new file's ctime is its entry's time, and metad
// reports a directory's times as the later of its inode's and its last entry
// change's). So the mount keeps what metad last gave it of each directory
// (GETATTR, LOOKUP, MKDIR) and of each file at its close, for AttrTimeout
// from when metad gave it, follows its own entry changes in a directory's
// times, and answers the GETATTR after such a change itself: what the kernel
// would have answered from its own cache had the change not dropped it.
//
// A change here the mount does not follow drops what it keeps first
// (setattr, an xattr, a link, an open of a file, mkdir, mknod, symlink; an
// unlink or rename drops every file's, whose inode it does not know; one
// that moves a directory's link count, or fails, drops everything). A close
// while another handle here writes the file keeps nothing, and a file some
// handle here is writing is never answered from it. A file's attributes
// answer once; a directory's stay, to follow its next changes.

// maxKnownAttrs bounds the table: past it, what is too old to answer goes,
// and if that is not enough, everything.
const maxKnownAttrs = 1 << 14

type knownAttr struct {
	in     metaapi.Inode
	at     time.Time // when metad gave them
	answer bool      // a change here moved them: answer the next GETATTR
}

// putKnownLocked keeps a; the caller holds f.mu.
func (f *fileSystem) putKnownLocked(a knownAttr) {
	if _, ok := f.known[a.in.ID]; !ok && len(f.known) >= maxKnownAttrs {
		for ino, e := range f.known {
			if time.Since(e.at) >= f.opts.AttrTimeout {
				delete(f.known, ino)
			}
		}
		if len(f.known) >= maxKnownAttrs {
			clear(f.known)
		}
	}
	if a.in.Inline != nil { // attributes only: a small file's bytes stay out of the table
		a.in.Inline, a.in.InlineOmitted = nil, true
	}
	f.known[a.in.ID] = a
}

// noteDirAttr keeps in, fresh from metad, if it is a directory's.
func (f *fileSystem) noteDirAttr(in metaapi.Inode) {
	if in.Type != metaapi.TypeDir || f.opts.AttrTimeout <= 0 {
		return
	}
	f.mu.Lock()
	f.putKnownLocked(knownAttr{in: in, at: time.Now()})
	f.mu.Unlock()
}

// noteClosedAttr keeps in, the attributes metad returned for the close of
// h's write session, to answer the next GETATTR of the file.
func (f *fileSystem) noteClosedAttr(h *handle, in metaapi.Inode) {
	if f.opts.AttrTimeout <= 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if oi := f.opened[h.ino]; oi != nil {
		for o := range oi.handles {
			if o != h && o.write {
				delete(f.known, h.ino)
				return
			}
		}
	}
	f.putKnownLocked(knownAttr{in: in, at: time.Now(), answer: true})
}

// dirChanged follows a change of an entry of dir made here at t (unix ns;
// 0: not known).
func (f *fileSystem) dirChanged(dir uint64, t int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dirChangedLocked(dir, t)
}

func (f *fileSystem) dirChangedLocked(dir uint64, t int64) {
	e, ok := f.known[dir]
	switch {
	case !ok:
	case t == 0 || time.Since(e.at) >= f.opts.AttrTimeout:
		delete(f.known, dir)
	default:
		e.in.Mtime, e.in.Ctime = max(e.in.Mtime, t), max(e.in.Ctime, t)
		e.answer = true
		f.known[dir] = e
	}
}

// followChange follows metad's answer to an unlink or rename here that
// changed entries of dirs (err: it may have changed them, how is not known).
func (f *fileSystem) followChange(c metaapi.ChangeResp, err error, dirs ...uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil || c.Subdirs {
		// A directory's link count moved, or a directory went: which
		// ones is not known here.
		clear(f.known)
		return
	}
	for ino, e := range f.known {
		if e.in.Type != metaapi.TypeDir {
			delete(f.known, ino) // the unlinked or moved file's, perhaps
		}
	}
	for _, d := range dirs {
		f.dirChangedLocked(d, c.DirTime)
	}
}

// takeAttr returns the attributes of ino if a change here moved them and
// they may answer a GETATTR now.
func (f *fileSystem) takeAttr(ino uint64) (metaapi.Inode, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.known[ino]
	if !ok || !e.answer {
		return metaapi.Inode{}, false
	}
	fresh := time.Since(e.at) < f.opts.AttrTimeout
	if e.in.Type == metaapi.TypeDir && fresh {
		e.answer = false
		f.known[ino] = e
	} else {
		delete(f.known, ino)
	}
	if !fresh || f.writingNowLocked(ino) {
		return metaapi.Inode{}, false
	}
	return e.in, true
}

// forgetAttrs drops what is kept of inos: this mount changes them in a way
// it does not follow.
func (f *fileSystem) forgetAttrs(inos ...uint64) {
	f.mu.Lock()
	for _, ino := range inos {
		delete(f.known, ino)
	}
	f.mu.Unlock()
}
