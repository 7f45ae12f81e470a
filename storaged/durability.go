package storaged

import (
	"context"

	"github.com/flyfs/flyfs/core/api/storageapi"
)

// Durability (package durability states the contract): a relaxed update
// (rpc.FlagRelaxed, a mount's) is applied relaxed on every replica it
// reaches: a block's content is synced before its record as always, but
// the record (and an inline chunk's content with it) is acknowledged once
// written, not synced. Each disk syncs within Config.SyncWindow, and
// handleSync at once: a mount's fsync(2) calls it on every node of the
// chains the file wrote. A staged update (WriteReq.Staged, an S3 body's)
// is relaxed further: its block's content is synced by the next sync
// too, before the record, since nothing refers to the chunk before the
// writer's Sync returns.

// handleSync makes every update this node acknowledged before durable.
func (s *Server) handleSync(ctx context.Context, _ *storageapi.SyncReq, _ []byte) (*storageapi.SyncResp, []byte, error) {
	for _, e := range s.engines {
		if err := e.Sync(); err != nil {
			return nil, nil, wireError(err)
		}
	}
	return &storageapi.SyncResp{}, nil, nil
}
