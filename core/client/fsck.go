package client

import (
	"context"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Fsck asks a metad to check the whole namespace (dentries against inodes,
// nlink counts, orphans, the GC queue, sessions).
func (m *Meta) Fsck(ctx context.Context) (*metaapi.FsckResp, error) {
	return callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.FsckResp, error) { return c.Fsck(ctx) })
}
