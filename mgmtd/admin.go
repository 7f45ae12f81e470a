package mgmtd

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// notPrimary is the answer of a mgmtd that may not act as primary.
func (s *Server) notPrimary() error { return mgmtdapi.NotPrimary(s.primaryAddr()) }

// handleSetChains creates chains or replaces their target lists. A new
// chain's targets start serving and up to date: a fresh chain holds no data,
// so there is nothing to sync. In a replaced chain a target it had keeps its
// state and a new one starts offline (it joins through waiting and syncing
// like a returning target). A chain asked for again unchanged is left alone,
// so retries do not bump versions.
func (s *Server) handleSetChains(ctx context.Context, req *mgmtdapi.SetChainsReq, _ []byte) (*mgmtdapi.SetChainsResp, []byte, error) {
	if err := validateChains(req.Chains); err != nil {
		return nil, nil, err
	}
	info, err := s.update(ctx, func(cur *routing.Info) (*change, error) {
		replaced := map[routing.ChainID]bool{}
		for _, c := range req.Chains {
			replaced[c.ID] = true
		}
		owner := map[routing.TargetID]routing.ChainID{}
		for id, c := range cur.Chains {
			if !replaced[id] {
				for _, t := range c.Targets {
					owner[t.ID] = id
				}
			}
		}
		ch := &change{why: "set chains"}
		for _, want := range req.Chains {
			for _, t := range want.Targets {
				if o, ok := owner[t.ID]; ok {
					return nil, rpc.Errorf(rpc.InvalidArgument, "chain %d: target %d belongs to chain %d", want.ID, t.ID, o)
				}
			}
			old := cur.Chains[want.ID]
			if old != nil && sameMembers(old, &want) {
				continue
			}
			next := &routing.Chain{ID: want.ID, Version: 1}
			if old != nil {
				next.Version = old.Version + 1
			}
			for _, t := range want.Targets {
				nt := routing.Target{ID: t.ID, Node: t.Node, Disk: t.Disk, Public: routing.Serving, Local: routing.UpToDate}
				if old != nil {
					nt.Public, nt.Local = routing.Offline, routing.LocalOffline
					if i := old.Index(t.ID); i >= 0 {
						nt.Public, nt.Local = old.Targets[i].Public, old.Targets[i].Local
					}
				} else {
					ch.fresh = append(ch.fresh, nt)
				}
				next.Targets = append(next.Targets, nt)
			}
			sortByState(next.Targets)
			ch.chains = append(ch.chains, next)
		}
		ch.tables = appendDefaultTable(cur, req.Chains)
		return ch, nil
	})
	ids := make([]string, 0, len(req.Chains))
	for _, c := range req.Chains {
		ids = append(ids, strconv.FormatUint(uint64(c.ID), 10))
	}
	s.audit(ctx, req.By, fmt.Sprintf("set chains %s", strings.Join(ids, ", ")), err)
	if err != nil {
		return nil, nil, err
	}
	return &mgmtdapi.SetChainsResp{RoutingVersion: info.Version}, nil, nil
}

// appendDefaultTable returns the default chain table (routing.DefaultTable:
// every chain, in id order) with a new version appended when the
// request adds chains it does not list yet, or nil.
func appendDefaultTable(cur *routing.Info, chains []routing.Chain) map[uint32][][]routing.ChainID {
	latest, _, _ := cur.LatestTable(routing.DefaultTable)
	have := map[routing.ChainID]bool{}
	for _, id := range latest {
		have[id] = true
	}
	next := append([]routing.ChainID(nil), latest...)
	for _, c := range chains {
		if !have[c.ID] {
			have[c.ID] = true
			next = append(next, c.ID)
		}
	}
	if len(next) == len(latest) {
		return nil
	}
	slices.Sort(next)
	return map[uint32][][]routing.ChainID{routing.DefaultTable: append(append([][]routing.ChainID(nil), cur.Tables[routing.DefaultTable]...), next)}
}

// validateChains rejects chain lists no cluster can have.
func validateChains(chains []routing.Chain) error {
	if len(chains) == 0 {
		return rpc.Errorf(rpc.InvalidArgument, "no chains given")
	}
	seenChain := map[routing.ChainID]bool{}
	seenTarget := map[routing.TargetID]routing.ChainID{}
	for _, c := range chains {
		switch {
		case c.ID == 0:
			return rpc.Errorf(rpc.InvalidArgument, "chain id 0 is reserved")
		case seenChain[c.ID]:
			return rpc.Errorf(rpc.InvalidArgument, "chain %d given twice", c.ID)
		case len(c.Targets) == 0:
			return rpc.Errorf(rpc.InvalidArgument, "chain %d has no targets", c.ID)
		}
		seenChain[c.ID] = true
		nodes := map[routing.NodeID]routing.TargetID{}
		for _, t := range c.Targets {
			if t.ID == 0 {
				return rpc.Errorf(rpc.InvalidArgument, "chain %d: target id 0 is reserved", c.ID)
			}
			if o, dup := seenTarget[t.ID]; dup {
				return rpc.Errorf(rpc.InvalidArgument, "target %d is in chains %d and %d", t.ID, o, c.ID)
			}
			seenTarget[t.ID] = c.ID
			if o, dup := nodes[t.Node]; dup {
				return rpc.Errorf(rpc.InvalidArgument, "chain %d: targets %d and %d are both on node %d", c.ID, o, t.ID, t.Node)
			}
			nodes[t.Node] = t.ID
			if t.Disk < 0 {
				return rpc.Errorf(rpc.InvalidArgument, "chain %d: target %d on disk %d", c.ID, t.ID, t.Disk)
			}
		}
	}
	return nil
}

// sameMembers reports whether want lists exactly a's targets, in order, on
// the same nodes and disks.
func sameMembers(a, want *routing.Chain) bool {
	return slices.EqualFunc(a.Targets, want.Targets, func(x, y routing.Target) bool {
		return x.ID == y.ID && x.Node == y.Node && x.Disk == y.Disk
	})
}

// sortByState orders targets serving, lastsrv, syncing, waiting, offline,
// stable within each group: the order the chain rule keeps.
func sortByState(ts []routing.Target) {
	rank := map[routing.PublicState]int{routing.Serving: 0, routing.LastSrv: 1, routing.Syncing: 2, routing.Waiting: 3, routing.Offline: 4}
	slices.SortStableFunc(ts, func(a, b routing.Target) int { return rank[a.Public] - rank[b.Public] })
}

// handleSetTargetHeld holds a target offline or releases it. The hold is
// persisted (a new primary keeps it) and the target's chain is updated in the
// same transaction, so the answer's routing version already shows the target
// offline at the tail (held) or, when its node reports it, back on its way
// through waiting and syncing (released).
func (s *Server) handleSetTargetHeld(ctx context.Context, req *mgmtdapi.SetTargetHeldReq, _ []byte) (*mgmtdapi.SetTargetHeldResp, []byte, error) {
	info, err := s.update(ctx, func(cur *routing.Info) (*change, error) {
		var chain *routing.Chain
		for _, id := range sortedChainIDs(cur) {
			if c := cur.Chains[id]; c.Index(req.Target) >= 0 {
				chain = c
				break
			}
		}
		if chain == nil {
			return nil, rpc.Errorf(mgmtdapi.CodeUnknownTarget, "no chain has target %d", req.Target)
		}
		ch := &change{held: map[routing.TargetID]bool{req.Target: req.Held}, heldBy: req.By, why: fmt.Sprintf("hold target %d", req.Target)}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.term == nil {
			return nil, s.notPrimary()
		}
		t, now := s.term, time.Now()
		local := func(id routing.TargetID) routing.LocalState {
			held := t.held[id]
			if id == req.Target {
				held = req.Held
			}
			return t.localOf(id, now, s.cfg.HeartbeatTimeout, held)
		}
		next, changed := nextChain(chain, local, t.fullFunc())
		if req.Held && !req.Force && len(chain.Readable()) > 0 && len(next.Readable()) == 0 {
			return nil, rpc.Errorf(mgmtdapi.CodeLastServing,
				"target %d is the last serving replica of chain %d: holding it offline leaves the chain with no replica to read or write until it returns (force to do it anyway)",
				req.Target, chain.ID)
		}
		if changed {
			ch.chains = []*routing.Chain{next}
		}
		return ch, nil
	})
	action := fmt.Sprintf("release target %d", req.Target)
	if req.Held {
		action = fmt.Sprintf("hold target %d offline", req.Target)
		if req.Force {
			action += " (forced)"
		}
	}
	s.audit(ctx, req.By, action, err)
	if err != nil {
		return nil, nil, err
	}
	s.log.Info("target hold changed", "target", req.Target, "held", req.Held, "forced", req.Force, "by", req.By, "routing_version", info.Version)
	return &mgmtdapi.SetTargetHeldResp{RoutingVersion: info.Version}, nil, nil
}

// handleSetNodeHeld puts a node into maintenance or ends it. Holding goes
// chain by chain (in id order) and target by target in chain order, each
// hold planned with the ones before it: a target is held only if its chain
// keeps a serving replica, so maintenance never takes a chain down (the
// targets skipped can be held later, once their chains have recovered
// elsewhere, by running it again).
func (s *Server) handleSetNodeHeld(ctx context.Context, req *mgmtdapi.SetNodeHeldReq, _ []byte) (*mgmtdapi.SetNodeHeldResp, []byte, error) {
	var plan []mgmtdapi.NodeTargetHold
	info, err := s.update(ctx, func(cur *routing.Info) (*change, error) {
		plan = nil
		ch := &change{held: map[routing.TargetID]bool{}, heldBy: req.By, why: fmt.Sprintf("maintenance of node %d", req.Node)}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.term == nil {
			return nil, s.notPrimary()
		}
		t, now := s.term, time.Now()
		local := func(id routing.TargetID) routing.LocalState {
			held, ok := ch.held[id]
			if !ok {
				held = t.held[id]
			}
			return t.localOf(id, now, s.cfg.HeartbeatTimeout, held)
		}
		for _, id := range sortedChainIDs(cur) {
			chain := cur.Chains[id]
			for _, tg := range chain.Targets {
				if tg.Node != req.Node {
					continue
				}
				p := mgmtdapi.NodeTargetHold{Target: tg.ID, Chain: chain.ID}
				switch {
				case t.held[tg.ID] == req.Held:
					p.Skipped = "already held"
					if !req.Held {
						p.Skipped = "not held"
					}
				default:
					ch.held[tg.ID] = req.Held
					next, _ := nextChain(chain, local, t.fullFunc())
					if req.Held && len(chain.Readable()) > 0 && len(next.Readable()) == 0 {
						delete(ch.held, tg.ID)
						p.Skipped = fmt.Sprintf("the last serving replica of chain %d", chain.ID)
					} else {
						p.Changed = true
					}
				}
				plan = append(plan, p)
			}
		}
		for _, id := range sortedChainIDs(cur) {
			chain := cur.Chains[id]
			next, changed := nextChain(chain, local, t.fullFunc())
			for i := range plan {
				if plan[i].Chain == chain.ID {
					plan[i].ChainServing = len(next.Readable())
				}
			}
			if changed && !req.DryRun {
				ch.chains = append(ch.chains, next)
			}
		}
		if req.DryRun {
			return nil, nil
		}
		return ch, nil
	})
	if !req.DryRun {
		var done, kept []string
		for _, p := range plan {
			if p.Changed {
				done = append(done, strconv.FormatUint(uint64(p.Target), 10))
			} else {
				kept = append(kept, fmt.Sprintf("%d (%s)", p.Target, p.Skipped))
			}
		}
		action := fmt.Sprintf("end maintenance of node %d: released %s", req.Node, listOrNone(done))
		if req.Held {
			action = fmt.Sprintf("start maintenance of node %d: held %s; kept %s", req.Node, listOrNone(done), listOrNone(kept))
		}
		s.audit(ctx, req.By, action, err)
	}
	if err != nil {
		return nil, nil, err
	}
	if !req.DryRun {
		s.log.Info("node maintenance changed", "node", req.Node, "held", req.Held, "targets", len(plan), "by", req.By, "routing_version", info.Version)
	}
	return &mgmtdapi.SetNodeHeldResp{Targets: plan, RoutingVersion: info.Version}, nil, nil
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// handleGetPrimary names the primary as the lease record says now, and the
// cluster.
func (s *Server) handleGetPrimary(ctx context.Context, _ *mgmtdapi.GetPrimaryReq, _ []byte) (*mgmtdapi.GetPrimaryResp, []byte, error) {
	resp := mgmtdapi.GetPrimaryResp{ClusterID: s.clusterID}
	err := s.cfg.KV.RunRead(ctx, func(tx kv.ReadTxn) error {
		rec, found, err := readLease(ctx, tx)
		if err == nil && found && rec.Expiry > time.Now().UnixNano() {
			resp.ID, resp.Addr = rec.Holder, rec.Addr
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return &resp, nil, nil
}

// handleListNodes lists storage nodes with their liveness (the primary's
// view) and the cluster managers. Another mgmtd redirects to the primary, or,
// when none is elected, lists what the KV store knows and says so (Partial).
func (s *Server) handleListNodes(ctx context.Context, _ *mgmtdapi.ListNodesReq, _ []byte) (*mgmtdapi.ListNodesResp, []byte, error) {
	t := s.primaryTerm()
	if t == nil {
		if addr := s.primaryAddr(); addr != "" {
			return nil, nil, mgmtdapi.NotPrimary(addr)
		}
	}
	resp := &mgmtdapi.ListNodesResp{}
	var info *routing.Info
	err := s.cfg.KV.RunRead(ctx, func(tx kv.ReadTxn) error {
		now := time.Now().UnixNano()
		lease, found, err := readLease(ctx, tx)
		if err != nil {
			return err
		}
		recs, err := readMgmtds(ctx, tx)
		if err != nil {
			return err
		}
		resp.Mgmtds = resp.Mgmtds[:0]
		for _, r := range recs {
			if r.Expiry > now {
				resp.Mgmtds = append(resp.Mgmtds, mgmtdapi.MgmtdStatus{ID: r.ID, Addr: r.Addr,
					Primary: found && lease.Expiry > now && lease.Holder == r.ID})
			}
		}
		if found && lease.Expiry > now && !slices.ContainsFunc(resp.Mgmtds, func(m mgmtdapi.MgmtdStatus) bool { return m.ID == lease.Holder }) {
			resp.Mgmtds = append(resp.Mgmtds, mgmtdapi.MgmtdStatus{ID: lease.Holder, Addr: lease.Addr, Primary: true})
		}
		holds, err := readHolds(ctx, tx)
		if err != nil {
			return err
		}
		resp.Held, resp.Holds = resp.Held[:0], resp.Holds[:0]
		for id, h := range holds {
			resp.Held = append(resp.Held, id)
			resp.Holds = append(resp.Holds, mgmtdapi.TargetHold{Target: id, By: h.By, At: h.At})
		}
		slices.Sort(resp.Held)
		slices.SortFunc(resp.Holds, func(a, b mgmtdapi.TargetHold) int { return cmp.Compare(a.Target, b.Target) })
		info, err = readRouting(ctx, tx)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if t == nil {
		resp.Partial = true
		for _, id := range sortedNodeIDs(info.Nodes) {
			resp.Nodes = append(resp.Nodes, mgmtdapi.NodeStatus{Node: id, Addr: info.Nodes[id].Addr})
		}
		return resp, nil, nil
	}
	now := time.Now()
	s.mu.Lock()
	ids := make([]routing.NodeID, 0, len(t.nodes))
	for id := range t.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		n := t.nodes[id]
		addr := n.addr
		if a, ok := info.Nodes[id]; ok && addr == "" {
			addr = a.Addr
		}
		resp.Nodes = append(resp.Nodes, mgmtdapi.NodeStatus{Node: id, Addr: addr,
			Alive: n.heard && t.alive(n, now, s.cfg.HeartbeatTimeout), LastHeartbeat: n.lastWall,
			Targets: n.reports, Disks: n.disks})
	}
	s.mu.Unlock()
	return resp, nil, nil
}

func sortedNodeIDs(m map[routing.NodeID]routing.Node) []routing.NodeID {
	ids := make([]routing.NodeID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
