package storaged

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/durability"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/storaged/craq"
	"github.com/flyfs/flyfs/storaged/engine"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// handleWrite runs one update at this hop: check routing, deduplicate at the
// head, take the chunk's lock, apply as pending, forward to the successor,
// commit on its ack, answer.
func (s *Server) handleWrite(ctx context.Context, req *storageapi.WriteReq, data []byte) (*storageapi.WriteResp, []byte, error) {
	t, info, chain, err := s.route(req.Key.Chain, req.Key.ChainVer)
	if err != nil {
		return nil, nil, err
	}
	if req.Relay {
		if head, ok := chain.Head(); !ok || head.ID != t.id {
			resp, err := s.relayWrite(ctx, t, info, chain, req, data)
			return resp, nil, err
		}
		req.Relay = false // this target is the head: the update is its own
	}
	if err := s.checkRole(t, chain, req.Forwarded); err != nil {
		return nil, nil, err
	}
	if err := checkUpdate(req, data); err != nil {
		return nil, nil, err
	}
	// Every hop remembers the client's tag, so that after a head failover the
	// new head recognises a client's retry of an update the chain already
	// committed, and answers it instead of applying it again.
	//
	// Only the head answers from that memory. A hop downstream always runs the
	// version logic (which makes a resent forward harmless) and then records
	// the tag: answering a forward from the cache would acknowledge a version
	// the hop never applied, when the head re-runs a client's update under a
	// new version after an earlier attempt of it failed above this hop.
	tagged := req.Tag.Client != 0 && !req.Resync
	var prior *chunkMark
	if tagged && !req.Forwarded {
		cached, mark, err := s.dedup.begin(req.Tag, req.Key.Chain)
		if err != nil || cached != nil {
			return cached, nil, err
		}
		prior = mark
	}
	start := time.Now()
	resp, after, err := s.updateLocked(ctx, t, req, data, prior)
	err = wireError(err)
	if s.metrics != nil {
		origin := originClient
		switch {
		case req.Resync:
			origin = originRecovery
		case req.Forwarded:
			origin = originChain
		}
		s.metrics.write(t.id, origin, len(data), time.Since(start), err)
	}
	if err == nil && !req.Forwarded && !req.Resync {
		s.io.writeOps.Add(1)
		s.io.writeBytes.Add(uint64(len(data)))
		s.io.writeLat.add(time.Since(start))
	}
	switch {
	case tagged && !req.Forwarded:
		s.dedup.finish(req.Tag, req.Key.Chain, resp, after, err)
	case tagged && err == nil:
		s.dedup.remember(req.Tag, req.Key.Chain, resp)
	}
	return resp, nil, err
}

// checkRole: a client's update must enter at the head; a forwarded one must
// reach a target that takes writes.
func (s *Server) checkRole(t *target, chain *routing.Chain, forwarded bool) error {
	i := chain.Index(t.id)
	if i < 0 {
		return rpc.Errorf(storageapi.CodeNoTarget, "target %d is not in chain %d", t.id, t.chain)
	}
	state, local := chain.Targets[i].Public, t.state.get()
	if !forwarded {
		if head, ok := chain.Head(); !ok || head.ID != t.id {
			return rpc.Errorf(storageapi.CodeNotHead, "target %d is not the head of chain %d", t.id, t.chain)
		}
		if local != routing.UpToDate {
			return rpc.Errorf(storageapi.CodeTargetNotServing, "target %d is %v here", t.id, local)
		}
		return nil
	}
	switch {
	case state == routing.Serving && local == routing.UpToDate:
	case state == routing.Syncing && local != routing.LocalOffline:
	default:
		return rpc.Errorf(storageapi.CodeTargetNotServing, "target %d is %v (%v here)", t.id, state, local)
	}
	return nil
}

func checkUpdate(req *storageapi.WriteReq, data []byte) error {
	switch req.Kind {
	case storageapi.KindWrite, storageapi.KindReplace:
		if crc32.Checksum(data, castagnoli) != req.Checksum {
			return rpc.Errorf(storageapi.CodeBadChecksum, "payload of %d bytes does not match its checksum", len(data))
		}
		if req.Kind == storageapi.KindReplace && req.Offset != 0 {
			return rpc.Errorf(rpc.InvalidArgument, "a replace starts at offset 0, not %d", req.Offset)
		}
		if uint64(req.Offset)+uint64(len(data)) > uint64(req.ChunkSize) {
			return rpc.Errorf(rpc.OutOfRange, "write of %d bytes at %d passes the chunk size %d", len(data), req.Offset, req.ChunkSize)
		}
	case storageapi.KindTruncate:
		if req.Length > req.ChunkSize {
			return rpc.Errorf(rpc.OutOfRange, "truncate to %d passes the chunk size %d", req.Length, req.ChunkSize)
		}
	case storageapi.KindRemove:
	default:
		return rpc.Errorf(rpc.InvalidArgument, "unknown update kind %d", req.Kind)
	}
	if len(req.Base) > layout.MaxLayers {
		return rpc.Errorf(rpc.InvalidArgument, "update of chunk %v through %d layers (at most %d)", req.Key.Chunk, len(req.Base), layout.MaxLayers)
	}
	if req.ChunkSize == 0 && req.Kind != storageapi.KindRemove {
		return rpc.Errorf(rpc.InvalidArgument, "chunk size 0")
	}
	return nil
}

func local(eng *engine.Engine, k engine.Key) (craq.Local, engine.Meta, error) {
	m, err := eng.GetMeta(k)
	if errors.Is(err, engine.ErrNotFound) {
		return craq.Local{}, engine.Meta{}, nil
	}
	if err != nil {
		return craq.Local{}, engine.Meta{}, err
	}
	return craq.Local{Exists: true, CommitVer: m.CommitVer, UpdateVer: m.UpdateVer}, m, nil
}

// updateLocked runs the update under the chunk's lock. prior is the mark an
// earlier, failed attempt of the same client update left (see dedup); the
// returned mark is the one this attempt leaves when it fails.
func (s *Server) updateLocked(ctx context.Context, t *target, req *storageapi.WriteReq, data []byte, prior *chunkMark) (*storageapi.WriteResp, *chunkMark, error) {
	k := t.key(req.Key.Chunk)
	unlock := s.locks.lock(k)
	defer unlock()
	if prior != nil {
		cur, err := markOf(t.eng, k)
		if err != nil {
			return nil, prior, err
		}
		if cur != *prior {
			// A later update ran over the earlier attempt's effect: running
			// this one now would undo it. The update is done once committed.
			resp, err := s.settleHeld(t, req.Key.Chunk)
			return resp, prior, err
		}
	}
	resp, took, err := s.updateHeld(ctx, t, req, data)
	s.noteCorrupt(t, req.Key.Chunk, err) // an update that had to read a corrupt segment
	if err == nil || req.Forwarded || req.Resync {
		return resp, nil, err
	}
	s.redriveLater(t, req.Key.Chunk) // a failed update may leave it pending here
	if !took {
		return nil, prior, err
	}
	after, merr := markOf(t.eng, k)
	if merr != nil {
		after = unreadableMark // no state equals it: a retry settles instead of running again
	}
	return nil, &after, err
}

// unreadableMark stands for a chunk state that could not be read.
var unreadableMark = chunkMark{exists: true, meta: engine.Meta{CommitVer: 1, UpdateVer: 0}}

// markOf is the chunk's state here, for dedup.
func markOf(eng *engine.Engine, k engine.Key) (chunkMark, error) {
	m, err := eng.GetMeta(k)
	if errors.Is(err, engine.ErrNotFound) {
		return chunkMark{}, nil
	}
	if err != nil {
		return chunkMark{}, err
	}
	return chunkMark{exists: true, meta: m}, nil
}

// updateHeld runs the update; the caller holds the chunk's lock. took reports
// whether a failed update may still have taken effect: it was applied here, or
// a removal was sent down the chain.
func (s *Server) updateHeld(ctx context.Context, t *target, req *storageapi.WriteReq, data []byte) (_ *storageapi.WriteResp, took bool, _ error) {
	k := t.key(req.Key.Chunk)
	// Routing may have moved while we waited for the lock.
	_, _, chain, err := s.route(req.Key.Chain, req.Key.ChainVer)
	if err != nil {
		return nil, false, err
	}
	if req.Resync {
		resp, err := s.applyResync(t, req, data)
		return resp, false, err
	}
	// Once applied here, the update goes down the chain to the end even if
	// the caller gives up (a client's attempt deadline, a hedge, a
	// predecessor's timeout): abandoning it would leave it pending here but
	// perhaps committed below, and the client's retry would then apply it a
	// second time under a new version.
	// A relaxed update (a mount's) is relaxed on every replica; the client
	// syncs them at fsync (storageapi's Sync).
	relaxed := durability.IsRelaxed(ctx) && s.cfg.SyncWindow > 0
	fctx, cancel := context.WithTimeout(s.bg, s.cfg.ForwardTimeout)
	defer cancel()
	if relaxed {
		fctx = durability.Relaxed(fctx)
	}
	if req.Kind == storageapi.KindRemove {
		if err := s.forward(fctx, t, req, nil, craq.Decision{}); err != nil {
			return nil, true, err
		}
		if err := t.eng.Remove(k); err != nil {
			return nil, true, err
		}
		return &storageapi.WriteResp{Meta: storageapi.ChunkMeta{Chunk: req.Key.Chunk}}, false, nil
	}

	if !req.Forwarded && req.Kind != storageapi.KindTruncate {
		if err := chainHasRoom(chain); err != nil {
			return nil, false, err
		}
	}
	l, meta, err := local(t.eng, k)
	if err != nil {
		return nil, false, err
	}
	if !req.Forwarded && !l.Exists && len(req.Base) > 0 {
		// The file's first change of a chunk it shares: it becomes its own,
		// the layer's bytes with the change on top, replaced whole on every
		// replica (they need not know the layer).
		cow, content, err := s.ownFromLayer(t, req, data)
		if err != nil {
			return nil, false, err
		}
		if cow != nil {
			req, data = cow, content
		}
	}
	var d craq.Decision
	if req.Forwarded {
		d = craq.Downstream(l, req.UpdateVer, req.Kind == storageapi.KindReplace)
	} else {
		d = craq.AtHead(l)
	}
	switch d.Action {
	case craq.Gap:
		return nil, false, rpc.Errorf(storageapi.CodeMissingUpdate, "chunk %v: version %d after %d/%d", req.Key.Chunk, d.Version, l.CommitVer, l.UpdateVer)
	case craq.AlreadyCommitted:
		return &storageapi.WriteResp{Meta: toWireMeta(req.Key.Chunk, meta)}, false, nil
	case craq.Apply:
		_, hasSuccessor := chain.Successor(t.id)
		commit := l.CommitVer
		if !hasSuccessor { // the tail commits as it applies: one metadata write
			commit = d.Version
		}
		u := engine.Update{Offset: req.Offset, Data: data, Length: req.Length, ChunkSize: req.ChunkSize,
			Replace: req.Kind == storageapi.KindReplace, Truncate: req.Kind == storageapi.KindTruncate,
			ChainVer: chain.Version, UpdateVer: d.Version, CommitVer: commit, Relaxed: relaxed, Direct: req.NoCache,
			Staged: relaxed && req.Staged}
		if meta, err = t.eng.Apply(k, u); err != nil {
			return nil, false, err
		}
	}
	if err := s.forward(fctx, t, req, data, d); err != nil {
		return nil, true, err
	}
	if craq.ShouldCommit(craq.Local{Exists: true, CommitVer: meta.CommitVer, UpdateVer: meta.UpdateVer}, d.Version) {
		if meta, err = t.eng.Commit(k, d.Version, chain.Version, relaxed); err != nil {
			return nil, true, err
		}
	}
	return &storageapi.WriteResp{Meta: toWireMeta(req.Key.Chunk, meta)}, false, nil
}

// forward sends the update to the successor and waits for its commit. While
// the successor fails it keeps retrying, re-reading routing, towards whatever
// target routing names next, until ForwardTimeout (craq.AfterForward decides
// each step); with no successor (the tail) it returns at once.
func (s *Server) forward(ctx context.Context, t *target, req *storageapi.WriteReq, data []byte, d craq.Decision) (err error) {
	sent := 0 // attempts that reached for the successor
	defer func() { s.metrics.forwarded(t.id, sent, err) }()
	deadline := time.Now().Add(s.cfg.ForwardTimeout)
	const firstBackoff = 20 * time.Millisecond
	backoff := firstBackoff
	sendWhole := false
	var last routing.TargetID
	for attempt := 0; ; attempt++ {
		info := s.cfg.Routing.Current()
		chain, ok := info.Chain(t.chain)
		if !ok || chain.Index(t.id) < 0 {
			return rpc.Errorf(rpc.FailedPrecondition, "target %d left chain %d", t.id, t.chain)
		}
		succ, ok := chain.Successor(t.id)
		if !ok {
			return nil // we are the tail now
		}
		if succ.ID != last {
			// A new successor may still be catching up with routing: its
			// refusals pass within milliseconds, whatever the old one cost.
			last, backoff = succ.ID, firstBackoff
		}
		addr, _ := info.Addr(succ.Node)
		fwd := *req
		fwd.Forwarded, fwd.Key.ChainVer = true, chain.Version
		fwd.UpdateVer, fwd.Syncing = d.Version, succ.Public == routing.Syncing
		payload := data
		if req.Kind != storageapi.KindRemove && craq.ForwardReplace(fwd.Syncing, d, sendWhole) {
			content, err := readWhole(t.eng, t.key(req.Key.Chunk))
			if err != nil {
				s.noteCorrupt(t, req.Key.Chunk, err)
				return err
			}
			fwd.Kind, fwd.Offset, fwd.Length = storageapi.KindReplace, 0, 0
			fwd.Checksum, payload = crc32.Checksum(content, castagnoli), content
		}
		actx, stop := s.whileSuccessor(ctx, t, succ.ID)
		sent++
		resp, err := s.peers.Write(actx, addr, &fwd, payload)
		stop()
		outcome := forwardOutcome(&fwd, resp, err)
		if outcome == craq.ForwardAckedBehind {
			s.log.Warn("successor acknowledged a version it does not hold", "chain", t.chain, "successor", succ.ID,
				"chunk", req.Key.Chunk, "version", fwd.UpdateVer, "its commit", resp.Meta.CommitVer)
			err = rpc.Errorf(rpc.Unavailable, "successor acknowledged version %d at committed version %d", fwd.UpdateVer, resp.Meta.CommitVer)
		}
		next := craq.AfterForward(outcome, ctx.Err() != nil || time.Now().After(deadline))
		sendWhole = sendWhole || next.SendWhole
		switch next.Action {
		case craq.ForwardDone:
			return nil
		case craq.ForwardResendNow: // the next attempt goes at once
		case craq.ForwardFail:
			return err // the successor refused the update itself
		case craq.ForwardGiveUp:
			return rpc.Errorf(rpc.Unavailable, "chain %d: successor target %d unreachable after %d attempts: %v", t.chain, succ.ID, attempt+1, err)
		case craq.ForwardRetryLater:
			s.log.Debug("forward failed, retrying", "chain", t.chain, "successor", succ.ID, "err", err)
			select {
			case <-s.cfg.Routing.Changed():
			case <-time.After(backoff):
				backoff = min(backoff*2, time.Second)
			case <-ctx.Done():
			}
		}
	}
}

// whileSuccessor returns a context for one forward to succ that ends when
// routing no longer names succ as t's successor: a forward to a frozen
// successor then moves on when the successor is declared failed, instead of
// waiting out the forward timeout while it holds the chunk's lock.
func (s *Server) whileSuccessor(ctx context.Context, t *target, succ routing.TargetID) (context.Context, func()) {
	actx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			changed := s.cfg.Routing.Changed()
			if !s.stillSuccessor(t, succ) {
				cancel()
				return
			}
			select {
			case <-changed:
			case <-actx.Done():
				return
			}
		}
	}()
	return actx, cancel
}

func (s *Server) stillSuccessor(t *target, succ routing.TargetID) bool {
	chain, ok := s.cfg.Routing.Current().Chain(t.chain)
	if !ok {
		return false
	}
	cur, ok := chain.Successor(t.id)
	return ok && cur.ID == succ
}

// readWhole returns a chunk's whole current content, pending or not.
func readWhole(eng *engine.Engine, k engine.Key) ([]byte, error) {
	h, err := eng.Get(k)
	if err != nil {
		return nil, err
	}
	defer h.Release()
	buf := make([]byte, h.Meta().Len)
	if n, err := h.ReadAt(buf, 0); n != len(buf) || (err != nil && !errors.Is(err, io.EOF)) {
		return nil, fmt.Errorf("read chunk %v for forwarding: %d of %d bytes: %w", k, n, len(buf), err)
	}
	return buf, nil
}

// chainHasRoom refuses, at the head and before anything is applied, an
// update of a chain whose routing says a replica's disk is full: the update
// would fail at that replica and stay pending at the hops before it.
// Truncates and removals pass (they need no new space).
func chainHasRoom(chain *routing.Chain) error {
	for _, t := range chain.Targets {
		if t.Full && (t.Public == routing.Serving || t.Public == routing.Syncing) {
			return rpc.Errorf(storageapi.CodeNoSpace, "chain %d: target %d's disk is full; writes resume when space returns", chain.ID, t.ID)
		}
	}
	return nil
}

// ownFromLayer turns a write or truncate of a chunk the file does not own
// into a whole-chunk replace: the first of req.Base that exists here, cut to
// the bytes the file sees, with the update applied. With no layer chunk here
// (the layers hold nothing there) it returns nil: the update runs as sent.
func (s *Server) ownFromLayer(t *target, req *storageapi.WriteReq, data []byte) (*storageapi.WriteReq, []byte, error) {
	if req.Kind != storageapi.KindWrite && req.Kind != storageapi.KindTruncate {
		return nil, nil, nil
	}
	for _, b := range req.Base {
		content, err := readWhole(t.eng, t.key(b.Chunk))
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		if err != nil {
			s.noteCorrupt(t, b.Chunk, err)
			return nil, nil, err
		}
		content = content[:min(uint32(len(content)), b.Len)]
		switch req.Kind {
		case storageapi.KindWrite:
			if end := int(req.Offset) + len(data); end > len(content) {
				content = append(content, make([]byte, end-len(content))...)
			}
			copy(content[req.Offset:], data)
		case storageapi.KindTruncate:
			if int(req.Length) <= len(content) {
				content = content[:req.Length]
			} else {
				content = append(content, make([]byte, int(req.Length)-len(content))...)
			}
		}
		cow := *req
		cow.Kind, cow.Offset, cow.Length, cow.Base = storageapi.KindReplace, 0, 0, nil
		cow.Checksum = crc32.Checksum(content, castagnoli)
		return &cow, content, nil
	}
	return nil, nil, nil
}
