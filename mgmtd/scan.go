package mgmtd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flyfs/flyfs/core/routing"
)

// The chain scan: every ScanInterval (and at once after a heartbeat changed a
// reported state) the primary declares nodes silent for T failed and applies
// routing.UpdateChain to every chain with the local states as the term sees
// them. The changed chains and the routing version bump go out in one
// lease-checked transaction.

func (s *Server) scanLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.ScanInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		case <-s.kick:
		}
		if s.primaryTerm() == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.LeaseLength)
		if err := s.scan(ctx); err != nil && s.ctx.Err() == nil {
			s.log.Warn("chain scan failed", "err", err)
		}
		cancel()
	}
}

// kickScan asks for a scan soon, without waiting for it.
func (s *Server) kickScan() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// scan runs one round of failure detection and chain updates.
func (s *Server) scan(ctx context.Context) error {
	var logs [][]any // what changed, logged once committed
	_, err := s.update(ctx, func(cur *routing.Info) (*change, error) {
		logs = logs[:0]
		now := time.Now()
		s.mu.Lock()
		defer s.mu.Unlock()
		t := s.term
		if t == nil {
			return nil, nil
		}
		for _, id := range t.detectFailures(now, s.cfg.HeartbeatTimeout) {
			s.log.Warn("node declared failed", "node", id, "silent_for", now.Sub(t.nodes[id].last).Round(time.Millisecond))
			s.metrics.nodeFailed()
		}
		local, full := t.localFunc(now, s.cfg.HeartbeatTimeout), t.fullFunc()
		ch := &change{why: "chain scan"}
		for _, id := range sortedChainIDs(cur) {
			old := cur.Chains[id]
			if next, changed := nextChain(old, local, full); changed {
				logs = append(logs, []any{"chain", id, "was", describeChain(old), "now", describeChain(next)})
				ch.chains = append(ch.chains, next)
			}
		}
		return ch, nil
	})
	if err == nil {
		s.metrics.chainUpdated(len(logs))
		for _, l := range logs {
			s.log.Info("chain updated", l...)
		}
	}
	return err
}

// nextChain applies the chain rule to c. A change of states or order bumps
// the chain version (routing.UpdateChain); a change of reported local states
// or of a disk's fullness alone is recorded without bumping it, so routing
// shows what nodes report and a new primary starts from it, while storage
// services see no new chain version for it.
func nextChain(c *routing.Chain, local func(routing.TargetID) routing.LocalState, full func(routing.TargetID) bool) (*routing.Chain, bool) {
	next, changed := routing.UpdateChain(c, local) // a copy, changed or not
	for i := range next.Targets {
		next.Targets[i].Full = full(next.Targets[i].ID)
	}
	if changed {
		return next, true
	}
	for i := range next.Targets {
		if next.Targets[i].Local != c.Targets[i].Local || next.Targets[i].Full != c.Targets[i].Full {
			return next, true
		}
	}
	return c, false
}

func sortedChainIDs(in *routing.Info) []routing.ChainID {
	ids := make([]routing.ChainID, 0, len(in.Chains))
	for id := range in.Chains {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// describeChain is a chain in one short line for logs: "v3 101:serving/up-to-date 102:offline/offline".
func describeChain(c *routing.Chain) string {
	var b strings.Builder
	fmt.Fprintf(&b, "v%d", c.Version)
	for _, t := range c.Targets {
		fmt.Fprintf(&b, " %d:%s/%s", t.ID, t.Public, t.Local)
	}
	return b.String()
}
