package metad

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/metad/ns"
)

// Length settling. Writers report the largest offset they wrote (hints), and
// the length is the largest hint. A writer that died (its session reaped)
// never reported its last writes, so when the last write session of a file
// ends, metad asks storage: the last chunk of the inode on each chain that
// may hold chunks (the chain-count hint, StripeHint, which writers grow
// before writing past it, keeps small files from querying every chain).
// Settling only grows the length: a file extended by truncate has no chunk at
// its end, and a concurrent truncate makes the hint's truncateVer stale, so
// the result is dropped. Clients send closes of one inode to one metad
// (rendezvous hashing), so settles of a file do not race each other.

// settleIfLastWriter settles in's length from storage if no write session
// remains; otherwise the remaining writers will. The close itself already
// succeeded with the writer's own hint, which is exact for a writer that
// reported everything; so a settle that cannot reach storage (a restart in
// progress) is logged, not failed: the hint stands.
func (s *Server) settleIfLastWriter(ctx context.Context, in ns.Inode) (ns.Inode, error) {
	if s.storage.RPC == nil || s.routing == nil || in.Type != ns.TypeFile || in.Nlink == 0 || in.Layout.TableID == 0 {
		return in, nil
	}
	sessions, err := s.ns.Sessions(ctx, in.ID)
	if err != nil || len(sessions) > 0 {
		return in, nil
	}
	settled, err := s.settle(ctx, in)
	if err != nil {
		s.log.Warn("length not settled from storage; the writer's report stands", "inode", in.ID, "err", err)
		return in, nil
	}
	return settled, nil
}

// settle grows in's length to what storage holds, if that is more.
func (s *Server) settle(ctx context.Context, in ns.Inode) (ns.Inode, error) {
	n, err := s.storageLength(ctx, in)
	if err != nil {
		return in, fmt.Errorf("settle length of %d: %w", in.ID, err)
	}
	if n <= in.Length {
		return in, nil
	}
	return s.ns.ReportLength(ctx, in.ID, in.TruncateVer, n, false)
}

// storageLength is the end of the inode's last chunk over the chains that
// may hold its chunks. A chain that moved on (a failover) is asked again
// with fresh routing, a few times.
func (s *Server) storageLength(ctx context.Context, in ns.Inode) (uint64, error) {
	var err error
	for try := 0; try < 4; try++ {
		var n uint64
		info := s.routing.Current()
		if n, err = s.storageLengthOnce(ctx, in, info); err == nil {
			return n, nil
		}
		switch rpc.CodeOf(err) {
		case storageapi.CodeChainVersion, storageapi.CodeNotHead, storageapi.CodeTargetNotServing, rpc.Unavailable:
		default:
			return 0, err
		}
		if _, rerr := s.routing.Refresh(ctx, info.Version); rerr != nil {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Duration(50<<try) * time.Millisecond):
		}
	}
	return 0, err
}

func (s *Server) storageLengthOnce(ctx context.Context, in ns.Inode, info *routing.Info) (uint64, error) {
	l := in.Layout
	list, ok := info.Table(l.TableID, l.TableVersion)
	if !ok {
		return 0, fmt.Errorf("chain table %d version %d is not in routing", l.TableID, l.TableVersion)
	}
	chains, err := layout.LastChunkChains(l, layout.ChainTable{ID: l.TableID, Version: l.TableVersion, Chains: list}, in.StripeHint)
	if err != nil {
		return 0, err
	}
	begin, end := layout.InodeChunks(in.DataID())
	var (
		mu    sync.Mutex
		max   uint64
		first error
		wg    sync.WaitGroup
	)
	for _, cid := range chains {
		wg.Add(1)
		go func(cid routing.ChainID) {
			defer wg.Done()
			n, err := s.lastChunkEnd(ctx, info, cid, begin, end, l.ChunkSize)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			if n > max {
				max = n
			}
		}(cid)
	}
	wg.Wait()
	return max, first
}

// lastChunkEnd asks the chain's tail (it holds only committed versions) for
// the inode's last chunk and returns where that chunk ends in the file.
func (s *Server) lastChunkEnd(ctx context.Context, info *routing.Info, cid routing.ChainID, begin, end layout.ChunkID, chunkSize uint32) (uint64, error) {
	c, ok := info.Chain(cid)
	if !ok {
		return 0, fmt.Errorf("chain %d not in routing", cid)
	}
	readable := c.Readable()
	if len(readable) == 0 {
		return 0, fmt.Errorf("chain %d has no serving target", cid)
	}
	// The tail first (it has only committed versions), then the others: a
	// replica that does not answer (a host cut off keeps its connections
	// hanging) must not hold the close that asked.
	var last error
	for i := len(readable) - 1; i >= 0; i-- {
		t := readable[i]
		addr, ok := info.Addr(t.Node)
		if !ok || addr == "" {
			last = fmt.Errorf("chain %d: node %d has no address yet", cid, t.Node)
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, settleQueryTimeout)
		resp, err := s.storage.QueryLastChunk(qctx, addr, &storageapi.ChunkRange{Chain: uint32(cid), ChainVer: c.Version, Begin: begin, End: end, Max: 1})
		cancel()
		if err != nil {
			last = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if !resp.Found {
			return 0, nil
		}
		return resp.LastChunk.Index()*uint64(chunkSize) + uint64(resp.LastLen), nil
	}
	return 0, last
}

// settleQueryTimeout bounds one replica's answer to a last-chunk query.
const settleQueryTimeout = 2 * time.Second
