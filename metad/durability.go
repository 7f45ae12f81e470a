package metad

import (
	"context"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Durability (package durability states the contract): a request that
// carries rpc.FlagRelaxed (the mount's) commits its transactions relaxed,
// acknowledged once logged; everything else commits durably. Changes that
// later work outside the store depends on are durable whatever the
// request says: inode id batches (chunks are named after inode ids) and
// the GC's claims (chunks are deleted after them) in metad/ns; a size cut
// in the client, which cuts chunks after it.

// sync makes every change acknowledged before it durable (fsync(2) and
// fsyncdir on a mount).
func (s *Server) sync(ctx context.Context, _ *metaapi.Empty, _ []byte) (*metaapi.Empty, []byte, error) {
	if err := s.ns.Sync(ctx); err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.Empty{}, nil, nil
}
