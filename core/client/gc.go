package client

import (
	"context"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Collect runs garbage collection of removed files now, on one metad;
// noGrace also takes files still in their grace period.
func (m *Meta) Collect(ctx context.Context, noGrace bool) (*metaapi.CollectResp, error) {
	req := &metaapi.CollectReq{NoGrace: noGrace}
	return callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.CollectResp, error) { return c.Collect(ctx, req) })
}
