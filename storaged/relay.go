package storaged

import (
	"context"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// relayWrite passes a client's update on to the chain's head and returns the
// head's answer, unchanged: the head deduplicates, versions, forwards and
// commits it as if the client had sent it itself. A client cut off from a
// head its chain still reaches (so routing keeps it) writes this way instead
// of waiting for the partition to heal. The relay holds no lock and keeps no
// state; a relayed update is never relayed again.
func (s *Server) relayWrite(ctx context.Context, t *target, info *routing.Info, chain *routing.Chain, req *storageapi.WriteReq, data []byte) (*storageapi.WriteResp, error) {
	if req.Forwarded || req.Resync {
		return nil, rpc.Errorf(rpc.InvalidArgument, "only a client's update is relayed, not a forward or a resync")
	}
	if err := checkUpdate(req, data); err != nil {
		return nil, err
	}
	if local := t.state.get(); local == routing.LocalOffline {
		return nil, rpc.Errorf(storageapi.CodeTargetNotServing, "target %d is %v here", t.id, local)
	}
	head, ok := chain.Head()
	if !ok {
		return nil, rpc.Errorf(rpc.Unavailable, "chain %d has no serving target", t.chain)
	}
	addr, ok := info.Addr(head.Node)
	if !ok {
		return nil, rpc.Errorf(storageapi.CodeNoTarget, "node %d of chain %d's head is not in routing", head.Node, t.chain)
	}
	fwd := *req
	fwd.Relay = false
	s.log.Debug("relaying a client's update to the head", "chain", t.chain, "head", head.ID, "chunk", req.Key.Chunk)
	return s.peers.Write(ctx, addr, &fwd, data)
}
