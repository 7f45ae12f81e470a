package metaapi

import (
	"context"

	"github.com/flyfs/flyfs/core/rpc"
)

// MethodCollect runs garbage collection now, on the metad that answers.
const MethodCollect rpc.Method = 0x0440

func init() { rpc.RegisterMethod(MethodCollect, "metad.Collect") }

// CollectReq asks for a collection now; NoGrace also reclaims removed files
// whose grace period has not run out (an operator freeing space).
type CollectReq struct {
	NoGrace bool `cbor:"1,keyasint,omitempty"`
}

// CollectResp says what the collection freed and what is left queued.
type CollectResp struct {
	Files     int64  `cbor:"1,keyasint,omitempty"`
	Bytes     uint64 `cbor:"2,keyasint,omitempty"` // the freed files' length
	QueueLeft int64  `cbor:"3,keyasint,omitempty"` // entries still queued (files in their grace, open ones, claimed elsewhere)
}

func (c Client) Collect(ctx context.Context, req *CollectReq) (*CollectResp, error) {
	return call[CollectReq, CollectResp](ctx, c, MethodCollect, req)
}
