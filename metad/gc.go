package metad

import (
	"context"
	"fmt"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/metad/ns"
)

// runGC reclaims removed files' chunks: every interval it takes up to batch
// due entries from the namespace's GC queue (several metad may do so at once:
// the queue hands each entry to one) and removes each file's chunks from every
// chain of its stripe, through the chains' heads. Bounded per interval, so GC
// never crowds out foreground work.
func (s *Server) runGC(ctx context.Context, interval time.Duration, batch int) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var purged time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.collect(ctx, batch, s.ns.GCGrace()); err != nil && ctx.Err() == nil {
			s.log.Warn("gc batch", "err", err)
		}
		// Now and then, the lock sessions of clients long gone, and the
		// trash's hours past their days.
		if now := time.Now(); now.Sub(purged) >= lockPurgeEvery {
			purged = now
			if _, err := s.ns.PurgeLockSessions(ctx, now.Add(-lockPurgeEvery)); err != nil && ctx.Err() == nil {
				s.log.Warn("purging expired lock sessions", "err", err)
			}
			if _, err := s.ns.PurgeTrash(ctx, now); err != nil && ctx.Err() == nil {
				s.log.Warn("purging the trash", "err", err)
			}
		}
	}
}

// lockPurgeEvery is how often expired lock sessions are removed, and how
// long past their expiry they are left.
const lockPurgeEvery = time.Minute

// collected is what one collection freed.
type collected struct {
	Entries int    // queue entries processed (files and directory steps)
	Files   int    // files whose chunks were deleted
	Bytes   uint64 // their length
}

// collect takes up to batch due entries (files due grace after removal),
// deletes the chunks of the files among them and then the inodes. A file
// whose chunks could not all be deleted keeps its claim, which expires: it
// is retried later.
func (s *Server) collect(ctx context.Context, batch int, grace time.Duration) (collected, error) {
	var c collected
	removed, err := s.ns.GCBatchGrace(ctx, batch, grace)
	c.Entries = len(removed)
	if err != nil {
		return c, err
	}
	var done []ns.Removed
	for _, r := range removed {
		if err := s.reclaim(ctx, r); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("gc: chunks of a removed file could not be deleted yet", "inode", r.Ino, "err", err)
			}
			continue
		}
		done = append(done, r)
	}
	if err := s.ns.GCDone(ctx, done); err != nil {
		return c, err // claims expire: redone later
	}
	for _, r := range done {
		c.Files++
		c.Bytes += r.Length
	}
	s.metrics.collected(c)
	return c, nil
}

// reclaim deletes all chunks of one removed file.
func (s *Server) reclaim(ctx context.Context, r ns.Removed) error {
	l := r.Layout
	if l.TableID == 0 {
		return nil // the file never got a layout, so never any data
	}
	info := s.routing.Current()
	chainList, ok := info.Table(l.TableID, l.TableVersion)
	if !ok {
		return fmt.Errorf("chain table %d version %d is not in routing", l.TableID, l.TableVersion)
	}
	chains, err := l.Chains(layout.ChainTable{ID: l.TableID, Version: l.TableVersion, Chains: chainList})
	if err != nil {
		return err
	}
	begin, end := layout.InodeChunks(r.DataID())
	for _, c := range chains {
		if err := s.removeRange(ctx, c, begin, end); err != nil {
			return fmt.Errorf("chain %d: %w", c, err)
		}
	}
	return nil
}

// removeRange removes a chunk range of one chain, page by page, retrying
// through routing changes for a while.
func (s *Server) removeRange(ctx context.Context, chain routing.ChainID, begin, end layout.ChunkID) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		info := s.routing.Current()
		c, ok := info.Chain(chain)
		if !ok {
			return fmt.Errorf("chain %d not in routing", chain)
		}
		var err error = rpc.Errorf(rpc.Unavailable, "chain %d has no serving head", chain)
		if head, ok := c.Head(); ok {
			addr, _ := info.Addr(head.Node)
			var resp *storageapi.RemoveChunksResp
			resp, err = s.storage.RemoveChunks(ctx, addr, &storageapi.ChunkRange{Chain: uint32(chain), ChainVer: c.Version, Begin: begin, End: end, Max: 256})
			if err == nil {
				if !resp.More {
					return nil
				}
				continue
			}
		}
		switch rpc.CodeOf(err) {
		case storageapi.CodeChainVersion, storageapi.CodeNotHead, storageapi.CodeTargetNotServing, rpc.Unavailable, rpc.DeadlineExceeded:
		default:
			return err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.routing.Changed():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// handleCollect runs collections now until one frees nothing and the queue
// stops shrinking, or the caller's deadline comes.
func (s *Server) handleCollect(ctx context.Context, r *metaapi.CollectReq, _ []byte) (*metaapi.CollectResp, []byte, error) {
	if s.storage.RPC == nil {
		return nil, nil, rpc.NewError(rpc.FailedPrecondition, "this metad runs no GC (it has no routing: flyfs metad --mgmtd)")
	}
	grace := s.ns.GCGrace()
	if r.NoGrace {
		grace = 0
	}
	resp := &metaapi.CollectResp{}
	last := -1
	for ctx.Err() == nil {
		c, err := s.collect(ctx, 256, grace)
		resp.Files += int64(c.Files)
		resp.Bytes += c.Bytes
		if err != nil {
			return nil, nil, wire(err)
		}
		q, err := s.ns.GCQueueLength(ctx)
		if err != nil {
			return nil, nil, wire(err)
		}
		resp.QueueLeft = int64(q)
		if q == 0 || c.Entries == 0 && q == last {
			break
		}
		last = q
	}
	s.log.Info("gc run by request", "files", resp.Files, "bytes", resp.Bytes, "queue_left", resp.QueueLeft, "no_grace", r.NoGrace)
	return resp, nil, nil
}
