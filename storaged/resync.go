package storaged

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/storaged/craq"
	"github.com/flyfs/flyfs/storaged/engine"
	"golang.org/x/time/rate"
)

var errRecoveryMoved = errors.New("routing moved during recovery")

// startRecoveries starts recovery of every syncing successor of a target this
// node serves, one recovery per chain at a time.
func (s *Server) startRecoveries(ctx context.Context) {
	info := s.cfg.Routing.Current()
	for _, t := range s.allTargets() {
		c, ok := info.Chain(t.chain)
		if !ok || t.state.get() != routing.UpToDate {
			continue
		}
		i := c.Index(t.id)
		if i < 0 || c.Targets[i].Public != routing.Serving {
			continue
		}
		succ, ok := c.Successor(t.id)
		if !ok || succ.Public != routing.Syncing {
			continue
		}
		if _, running := s.life.syncing.LoadOrStore(t.chain, struct{}{}); running {
			continue
		}
		s.life.wg.Add(1)
		go func(t *target, succ routing.Target) {
			defer s.life.wg.Done()
			defer s.life.syncing.Delete(t.chain)
			if err := s.recover(ctx, t, succ); err != nil && ctx.Err() == nil {
				s.log.Warn("recovery stopped", "chain", t.chain, "successor", succ.ID, "err", err)
			}
		}(t, succ)
	}
}

// stillSyncing checks that succ is still t's syncing successor.
func (s *Server) stillSyncing(t *target, succ routing.Target) (string, uint32, error) {
	info := s.cfg.Routing.Current()
	c, ok := info.Chain(t.chain)
	if !ok {
		return "", 0, errRecoveryMoved
	}
	cur, ok := c.Successor(t.id)
	if !ok || cur.ID != succ.ID || cur.Public != routing.Syncing || t.state.get() != routing.UpToDate {
		return "", 0, errRecoveryMoved
	}
	addr, _ := info.Addr(cur.Node)
	return addr, c.Version, nil
}

// recover brings a syncing successor up to date: compare chunk metadata, send
// what differs as full-chunk replaces (or removals) under each chunk's lock,
// then tell it sync-done. New writes reach it meanwhile through the chain, as
// full-chunk replaces.
func (s *Server) recover(ctx context.Context, t *target, succ routing.Target) error {
	addr, _, err := s.stillSyncing(t, succ)
	if err != nil {
		return err
	}
	s.log.Info("recovery starting", "chain", t.chain, "successor", succ.ID)
	remote, err := s.dumpChunkStates(ctx, addr, t.chain)
	if err != nil {
		return err
	}
	local, err := localChunkStates(t)
	if err != nil {
		return err
	}
	plan := craq.PlanRecovery(local, remote)
	t.state.mu.Lock()
	t.state.syncTarget, t.state.syncTotal, t.state.syncBytesTotal = uint32(succ.ID), uint64(plan.Chunks()), plan.SendBytes
	t.state.syncDone, t.state.syncBytes = uint64(plan.Skipped), 0 // the skipped ones are done
	t.state.mu.Unlock()
	progress := func(bytes int) {
		s.metrics.recovered(t.id, bytes)
		t.state.mu.Lock()
		t.state.syncDone++
		t.state.syncBytes += uint64(bytes)
		t.state.mu.Unlock()
	}
	limit := s.cfg.ResyncBytesPerSec
	if limit <= 0 {
		limit = 256 << 20
	}
	lim := rate.NewLimiter(rate.Limit(limit), 64<<20)
	var sent, removed int
	for _, step := range plan.Steps {
		n := 0
		switch step.Action {
		case craq.SyncRemove:
			err = s.transferRemove(ctx, t, succ, step.Chunk)
			removed++
		case craq.SyncSend:
			n, err = s.transfer(ctx, t, succ, step.Chunk, lim)
			sent++
		}
		if err != nil {
			return err
		}
		progress(n)
	}
	addr, ver, err := s.stillSyncing(t, succ)
	if err != nil {
		return err
	}
	if err := s.peers.SyncDone(ctx, addr, &storageapi.SyncDoneReq{Chain: uint32(t.chain), ChainVer: ver, Target: uint32(succ.ID)}); err != nil {
		return fmt.Errorf("sync-done: %w", err)
	}
	s.log.Info("recovery done", "chain", t.chain, "successor", succ.ID, "chunks", plan.Chunks(), "sent", sent, "removed", removed)
	t.state.mu.Lock()
	t.state.syncTarget = 0
	t.state.mu.Unlock()
	return nil
}

// dumpChunkStates pages through the successor's chunk metadata of a chain.
func (s *Server) dumpChunkStates(ctx context.Context, addr string, chain routing.ChainID) (map[layout.ChunkID]craq.ChunkState, error) {
	states := map[layout.ChunkID]craq.ChunkState{}
	var begin layout.ChunkID
	for {
		page, err := s.peers.DumpChunkMeta(ctx, addr, &storageapi.ChunkRange{Chain: uint32(chain), Begin: begin, Max: 4096})
		if err != nil {
			return nil, fmt.Errorf("dump successor's chunk metadata: %w", err)
		}
		for _, m := range page.Metas {
			states[m.Chunk] = craq.ChunkState{ChainVer: m.ChainVer, CommitVer: m.CommitVer, UpdateVer: m.UpdateVer, Checksum: m.Checksum, Len: m.Len}
		}
		if !page.More || len(page.Metas) == 0 {
			return states, nil
		}
		begin = page.Metas[len(page.Metas)-1].Chunk.Next()
	}
}

// localChunkStates pages through t's own chunk metadata.
func localChunkStates(t *target) (map[layout.ChunkID]craq.ChunkState, error) {
	states := map[layout.ChunkID]craq.ChunkState{}
	var from layout.ChunkID
	for {
		page, more, err := t.eng.List(uint32(t.chain), from, layout.ChunkID{}, 4096, false)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			m := e.Meta
			states[e.Chunk] = craq.ChunkState{ChainVer: m.ChainVer, CommitVer: m.CommitVer, UpdateVer: m.UpdateVer, Checksum: m.Checksum, Len: m.Len}
		}
		if !more || len(page) == 0 {
			return states, nil
		}
		from = page[len(page)-1].Chunk.Next()
	}
}

// transfer sends one chunk's current content and versions, under its lock so
// no write of the chunk runs between reading and sending it.
func (s *Server) transfer(ctx context.Context, t *target, succ routing.Target, id layout.ChunkID, lim *rate.Limiter) (int, error) {
	k := t.key(id)
	unlock := s.locks.lock(k)
	defer unlock()
	addr, ver, err := s.stillSyncing(t, succ)
	if err != nil {
		return 0, err
	}
	m, err := t.eng.GetMeta(k)
	if errors.Is(err, engine.ErrNotFound) {
		return 0, s.sendRemove(ctx, t, addr, ver, id) // removed since we listed it
	}
	if err != nil {
		return 0, err
	}
	content, err := readWhole(t.eng, k)
	if err != nil {
		// A corrupt chunk is never sent: recovery stops (and is retried)
		// until the chunk is repaired from another serving replica.
		s.noteCorrupt(t, id, err)
		return 0, err
	}
	if err := lim.WaitN(ctx, min(len(content), lim.Burst())); err != nil {
		return 0, err
	}
	req := &storageapi.WriteReq{Key: storageapi.Key{Chain: uint32(t.chain), ChainVer: ver, Chunk: id},
		Kind: storageapi.KindReplace, ChunkSize: m.ChunkSize, Checksum: crc32.Checksum(content, castagnoli),
		Forwarded: true, Resync: true, Syncing: true, UpdateVer: m.UpdateVer, CommitVer: m.CommitVer}
	if _, err := s.peers.Write(ctx, addr, req, content); err != nil {
		return 0, fmt.Errorf("send chunk %v: %w", id, err)
	}
	return len(content), nil
}

func (s *Server) transferRemove(ctx context.Context, t *target, succ routing.Target, id layout.ChunkID) error {
	k := t.key(id)
	unlock := s.locks.lock(k)
	defer unlock()
	addr, ver, err := s.stillSyncing(t, succ)
	if err != nil {
		return err
	}
	if _, err := t.eng.GetMeta(k); err == nil {
		return nil // written since we listed it: the write itself reached the successor
	}
	return s.sendRemove(ctx, t, addr, ver, id)
}

func (s *Server) sendRemove(ctx context.Context, t *target, addr string, ver uint32, id layout.ChunkID) error {
	req := &storageapi.WriteReq{Key: storageapi.Key{Chain: uint32(t.chain), ChainVer: ver, Chunk: id},
		Kind: storageapi.KindRemove, Forwarded: true, Resync: true, Checksum: crc32.Checksum(nil, castagnoli)}
	_, err := s.peers.Write(ctx, addr, req, nil)
	return err
}

// applyResync takes a recovery transfer exactly as sent.
func (s *Server) applyResync(t *target, req *storageapi.WriteReq, data []byte) (*storageapi.WriteResp, error) {
	k := t.key(req.Key.Chunk)
	if req.Kind == storageapi.KindRemove {
		return &storageapi.WriteResp{Meta: storageapi.ChunkMeta{Chunk: req.Key.Chunk}}, t.eng.Remove(k)
	}
	u := engine.Update{Data: data, Replace: true, ChunkSize: req.ChunkSize, ChainVer: req.Key.ChainVer, UpdateVer: req.UpdateVer, CommitVer: req.CommitVer}
	m, err := t.eng.Apply(k, u)
	if errors.Is(err, engine.ErrChunkSizeMismatch) { // a different chunk by the same id: replace it whole
		if err = t.eng.Remove(k); err == nil {
			m, err = t.eng.Apply(k, u)
		}
	}
	if err != nil {
		return nil, err
	}
	return &storageapi.WriteResp{Meta: toWireMeta(req.Key.Chunk, m)}, nil
}
