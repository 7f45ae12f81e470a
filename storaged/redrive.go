package storaged

import (
	"context"
	"errors"
	"hash/crc32"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/storaged/engine"
)

// A chunk stays pending at a replica when the update that made it pending
// failed on its way down the chain and nobody writes the chunk again: reads
// then answer "being updated" for good. So a head re-drives its own pending
// chunks: under the chunk's lock it sends its current content down the chain
// as a replace at the next version and commits it. That completes an update
// that was never acknowledged, which is allowed (its outcome was unknown).
// A head does so after a client update fails at it, and, for the pending
// chunks it holds, whenever it becomes a chain's head.

// redriveLater re-drives one chunk in the background, with backoff, until it
// is not pending here or this target is no longer the head. It gives up
// after a minute or so, unless what stops it is a full disk on the chain:
// that passes when space returns, and the chunk must not stay pending then.
func (s *Server) redriveLater(t *target, chunk layout.ChunkID) {
	key := t.key(chunk)
	if _, busy := s.redriving.LoadOrStore(key, struct{}{}); busy {
		return
	}
	go func() {
		defer s.redriving.Delete(key)
		delay := 100 * time.Millisecond
		for try := 0; !s.isClosed(); try++ {
			time.Sleep(delay)
			delay = min(delay*2, 2*time.Second)
			done, err := s.redrive(t, chunk)
			if done || try >= 30 && rpc.CodeOf(err) != storageapi.CodeNoSpace {
				return
			}
		}
	}()
}

// redrive re-drives chunk if it is pending at this head; it reports whether
// nothing is left to do (committed, gone, or not the head any more), and
// why not.
func (s *Server) redrive(t *target, chunk layout.ChunkID) (bool, error) {
	unlock := s.locks.lock(t.key(chunk))
	defer unlock()
	return s.redriveHeld(t, chunk)
}

// redriveHeld is redrive for a caller holding the chunk's lock.
func (s *Server) redriveHeld(t *target, chunk layout.ChunkID) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ForwardTimeout+time.Second)
	defer cancel()
	k := t.key(chunk)
	m, err := t.eng.GetMeta(k)
	if err != nil || !m.Pending() {
		return true, nil
	}
	info := s.cfg.Routing.Current()
	c, ok := info.Chain(t.chain)
	if !ok {
		return true, nil
	}
	if head, ok := c.Head(); !ok || head.ID != t.id {
		return true, nil
	}
	content, err := readWhole(t.eng, k)
	if err != nil {
		s.noteCorrupt(t, chunk, err)
		return false, err
	}
	req := &storageapi.WriteReq{Key: storageapi.Key{Chain: uint32(t.chain), ChainVer: c.Version, Chunk: chunk},
		Kind: storageapi.KindReplace, ChunkSize: m.ChunkSize, Checksum: crc32.Checksum(content, castagnoli)}
	if _, _, err := s.updateHeld(ctx, t, req, content); err != nil {
		s.log.Debug("re-drive of a pending chunk failed", "chain", t.chain, "chunk", chunk, "err", err)
		return false, wireError(err)
	}
	return true, nil
}

// watchHeads re-drives the pending chunks of every chain this node becomes
// the head of.
func (s *Server) watchHeads(ctx context.Context) {
	heads := map[routing.ChainID]routing.TargetID{}
	for {
		changed := s.cfg.Routing.Changed()
		info := s.cfg.Routing.Current()
		for _, t := range s.allTargets() {
			c, ok := info.Chain(t.chain)
			if !ok {
				continue
			}
			head, ok := c.Head()
			if ok && head.ID == t.id && heads[t.chain] != t.id {
				s.redrivePending(t)
			}
			heads[t.chain] = head.ID
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-time.After(5 * time.Second):
		}
	}
}

// redrivePending schedules every pending chunk of t for re-driving.
func (s *Server) redrivePending(t *target) {
	var from layout.ChunkID
	for {
		page, more, err := t.eng.List(uint32(t.chain), from, layout.ChunkID{}, 4096, false)
		if err != nil {
			return
		}
		for _, e := range page {
			if e.Meta.Pending() {
				s.redriveLater(t, e.Chunk)
			}
		}
		if !more || len(page) == 0 {
			return
		}
		from = page[len(page)-1].Chunk.Next()
	}
}

// settleHeld answers the retry of an update that a later update ran over: the
// update is done once the chunk is committed, so a chunk left pending is
// re-driven first. The caller holds the chunk's lock.
func (s *Server) settleHeld(t *target, chunk layout.ChunkID) (*storageapi.WriteResp, error) {
	if _, err := s.redriveHeld(t, chunk); err != nil {
		return nil, err
	}
	m, err := t.eng.GetMeta(t.key(chunk))
	switch {
	case errors.Is(err, engine.ErrNotFound):
		return &storageapi.WriteResp{Meta: storageapi.ChunkMeta{Chunk: chunk}}, nil
	case err != nil:
		return nil, err
	case m.Pending():
		return nil, rpc.Errorf(rpc.Unavailable, "chunk %v is still pending at version %d over %d", chunk, m.UpdateVer, m.CommitVer)
	}
	return &storageapi.WriteResp{Meta: toWireMeta(chunk, m)}, nil
}
