package client

import (
	"context"
	"syscall"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Clone makes newName in newParent with the bytes of file src without
// copying them: the two share chunks until either writes (metad's Clone).
// preserve keeps src's mode, owner, times and xattrs; otherwise the new file
// is mode with cr's owner. EBUSY while src is open for writing.
func (m *Meta) Clone(ctx context.Context, src, newParent uint64, newName string, preserve bool, mode uint32, cr Creds) (metaapi.Inode, error) {
	req := &metaapi.CloneReq{ReqID: newReqID(), Src: src, Parent: newParent, Name: newName, Preserve: preserve, Mode: mode, UID: cr.UID, GID: cr.GID}
	return inodeOf(callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.Clone(ctx, req) }))
}

// CloneInto gives the empty file of write session session the bytes of src
// without copying them (metad's ShareInto); it returns the file's inode,
// which now has src's layout: reopen the writer's view with it.
func (m *Meta) CloneInto(ctx context.Context, src uint64, session []byte) (metaapi.Inode, error) {
	req := &metaapi.CloneIntoReq{ReqID: newReqID(), Src: src, Session: session}
	return inodeOf(callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.CloneInto(ctx, req) }))
}

// ShareFrom gives this file, open for writing and not written through, the
// bytes of file src without copying them, and returns the handle to write
// it through from now on (same session; this one is spent). EINVAL once it
// has written.
func (f *File) ShareFrom(ctx context.Context, src uint64) (*File, error) {
	f.mu.Lock()
	wrote, end, session := f.wrote || f.uncertain, f.end, f.session
	f.mu.Unlock()
	if session == nil {
		return nil, pathErr("copy", f.path, syscall.EBADF)
	}
	if wrote || end > 0 {
		return nil, pathErr("copy", f.path, syscall.EINVAL)
	}
	in, err := f.fs.Meta().CloneInto(ctx, src, session)
	if err != nil {
		return nil, pathErr("copy", f.path, err)
	}
	return f.fs.file(ctx, f.path, in, session)
}
