package client

import (
	"context"

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
