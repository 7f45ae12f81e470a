package mgmtd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/routing"
)

// errStale: the routing moved between computing a change and writing it.
var errStale = errors.New("mgmtd: routing changed under the write")

// change is one write of the primary.
type change struct {
	chains []*routing.Chain               // replace these chains
	nodes  []routing.Node                 // record these node addresses
	held   map[routing.TargetID]bool      // hold (true) or release (false) these targets
	heldBy string                         // who asked for the holds
	fresh  []routing.Target               // targets of new chains: given a grace period in the term
	tables map[uint32][][]routing.ChainID // chain tables with a version appended
	why    string                         // for the log
}

func (c *change) empty() bool {
	return c == nil || len(c.chains) == 0 && len(c.nodes) == 0 && len(c.held) == 0 && len(c.tables) == 0
}

// routingChanged reports whether the change touches routing (and so bumps
// its version).
func (c *change) routingChanged() bool {
	return len(c.chains) > 0 || len(c.nodes) > 0 || len(c.tables) > 0
}

// update computes a change against the newest routing with build and writes
// it as primary, recomputing when the routing moved underneath. It returns the
// routing that holds the change (the current one when build asks for
// nothing). Writes are serialised by writeMu, so in practice only a change
// that committed but reported an unknown result needs a second round.
func (s *Server) update(ctx context.Context, build func(cur *routing.Info) (*change, error)) (*routing.Info, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	for attempt := 1; ; attempt++ {
		t := s.primaryTerm()
		if t == nil {
			return nil, s.notPrimary()
		}
		cur, err := s.loadRouting(ctx)
		if err != nil {
			return nil, err
		}
		ch, err := build(cur)
		if err != nil || ch.empty() {
			return cur, err
		}
		next, err := s.write(ctx, t, cur, ch)
		if errors.Is(err, errStale) && attempt < 5 {
			continue
		}
		return next, err
	}
}

// write commits ch, computed against base, in one transaction that checks
// that this process still holds the lease in term t and that base is still
// the newest routing, and bumps the routing version when routing changes.
// Then it applies ch to the term's memory and the routing cache. The caller
// holds writeMu.
func (s *Server) write(ctx context.Context, t *term, base *routing.Info, ch *change) (*routing.Info, error) {
	err := s.cfg.KV.Run(ctx, func(tx kv.Txn) error {
		if err := s.checkLease(ctx, tx, t.id); err != nil {
			return err
		}
		ver, err := readVersion(ctx, tx)
		if err != nil {
			return err
		}
		if ver != base.Version {
			return errStale
		}
		for _, c := range ch.chains {
			tx.Set(chainKey(c.ID), encode(c))
		}
		for _, n := range ch.nodes {
			tx.Set(nodeKey(n.ID), encode(nodeRecord{Addr: n.Addr}))
		}
		for id, vs := range ch.tables {
			tx.Set(idKey(tableTag, id), encode(vs))
		}
		for id, h := range ch.held {
			if h {
				tx.Set(heldKey(id), encode(heldRecord{Held: true, By: ch.heldBy, At: time.Now().UnixNano()}))
			} else {
				tx.Clear(heldKey(id))
			}
		}
		if ch.routingChanged() {
			tx.Set(versionKey, versionValue(ver+1))
		}
		return nil
	})
	switch {
	case errors.Is(err, errLeaseLost):
		s.stepDown(t.id, "a write found the lease gone")
		s.noteLease(ctx)
		return nil, s.notPrimary()
	case errors.Is(err, errStale):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("mgmtd: write %s: %w", ch.why, err)
	}
	next := base
	if ch.routingChanged() {
		next = base.Clone()
		next.Version = base.Version + 1
		for _, c := range ch.chains {
			cc := *c
			cc.Targets = append([]routing.Target(nil), c.Targets...)
			next.Chains[c.ID] = &cc
		}
		for _, n := range ch.nodes {
			next.Nodes[n.ID] = n
		}
		for id, vs := range ch.tables {
			if next.Tables == nil {
				next.Tables = map[uint32][][]routing.ChainID{}
			}
			next.Tables[id] = vs
		}
		s.storeRouting(next)
	}
	s.mu.Lock()
	if s.term == t {
		for id, h := range ch.held {
			if h {
				t.held[id] = true
			} else {
				delete(t.held, id)
			}
		}
		t.adopt(ch.fresh, time.Now())
	}
	s.mu.Unlock()
	return next, nil
}
