package fusefs

import (
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Attributes of a close. A write makes the kernel drop the file's cached
// attributes, so the first stat after the file is closed asks the mount,
// though the close that ended the writes brought the file's attributes from
// metad a moment before. The first GETATTR of the file within AttrTimeout of
// that close is answered with them: what the kernel would have answered from
// its own cache had the write not dropped it. Anything this mount does to
// the file's attributes in between (an open, setattr, link, unlink, rename,
// an xattr, a lock) drops them first; a close while another handle here
// writes the file leaves none, and a file some handle here is writing is
// never answered from them.

type closedAttr struct {
	in metaapi.Inode
	at time.Time
}

// noteClosedAttr records in, the attributes metad returned for the close of
// h's write session.
func (f *fileSystem) noteClosedAttr(h *handle, in metaapi.Inode) {
	if f.opts.AttrTimeout <= 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if oi := f.opened[h.ino]; oi != nil {
		for o := range oi.handles {
			if o != h && o.write {
				return
			}
		}
	}
	f.closedAttrs[h.ino] = closedAttr{in: in, at: time.Now()}
}

// takeClosedAttr returns the attributes of ino's last close if they may
// answer a GETATTR now, and forgets them either way.
func (f *fileSystem) takeClosedAttr(ino uint64) (metaapi.Inode, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.closedAttrs[ino]
	if !ok {
		return metaapi.Inode{}, false
	}
	delete(f.closedAttrs, ino)
	if time.Since(e.at) >= f.opts.AttrTimeout {
		return metaapi.Inode{}, false
	}
	if oi := f.opened[ino]; oi != nil {
		for h := range oi.handles {
			if h.write && (h.live.Load() || h.dirty.Load()) {
				return metaapi.Inode{}, false
			}
		}
	}
	return e.in, true
}

// dropClosedAttr forgets ino's close attributes: this mount changes ino.
func (f *fileSystem) dropClosedAttr(ino uint64) {
	f.mu.Lock()
	delete(f.closedAttrs, ino)
	f.mu.Unlock()
}

// dropClosedAttrs forgets every file's close attributes: this mount changes
// a file it names by its entry (unlink, rename), whose inode it does not know.
func (f *fileSystem) dropClosedAttrs() {
	f.mu.Lock()
	clear(f.closedAttrs)
	f.mu.Unlock()
}
