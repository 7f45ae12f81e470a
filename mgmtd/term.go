package mgmtd

import (
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/routing"
)

// term is the primary's in-memory view for one lease term: node liveness,
// the targets' reported local states, and the held targets. It is rebuilt
// from the KV store at every takeover and dropped when the lease is lost, so
// nothing in it outlives the term it was learned in. Guarded by Server.mu.
type term struct {
	id        uint64
	since     time.Time // takeover, monotonic
	bootUntil time.Time // no node is declared failed before this

	nodes   map[routing.NodeID]*nodeState
	targets map[routing.TargetID]targetState
	held    map[routing.TargetID]bool

	services map[[2]string]*serviceState // by kind and id
}

// nodeState is one storage node's liveness and last reports.
type nodeState struct {
	addr        string
	last        time.Time // liveness clock (monotonic): last heartbeat, or the takeover
	lastWall    int64     // unix ns of the last heartbeat heard in this term; 0 before
	heard       bool      // a heartbeat arrived in this term
	failed      bool      // declared failed (logged once)
	incarnation uint64
	seq         uint64
	reports     []mgmtdapi.TargetReport
	disks       []mgmtdapi.DiskReport
	hosts       map[routing.TargetID]bool // targets this node hosts, per its reports (or the chains until it reports)
}

// targetState is a target's reported local state and the node reporting it.
type targetState struct {
	node  routing.NodeID
	local routing.LocalState
	full  bool // its disk is out of space
}

// newTerm builds the view of a new primary: every node known from the KV
// store gets a fresh liveness clock, and every target starts from the local
// state persisted with its chain, so nothing changes until nodes either
// report or stay silent for T.
func newTerm(id uint64, st *state, now, bootUntil time.Time) *term {
	t := &term{id: id, since: now, bootUntil: bootUntil,
		nodes: map[routing.NodeID]*nodeState{}, targets: map[routing.TargetID]targetState{}, held: map[routing.TargetID]bool{},
		services: map[[2]string]*serviceState{}}
	for nid, n := range st.info.Nodes {
		t.node(nid, now).addr = n.Addr
	}
	for _, c := range st.info.Chains {
		for _, tg := range c.Targets {
			t.targets[tg.ID] = targetState{node: tg.Node, local: persistedLocal(tg), full: tg.Full}
			t.node(tg.Node, now).hosts[tg.ID] = true
		}
	}
	for tid, h := range st.held {
		if h {
			t.held[tid] = true
		}
	}
	return t
}

// persistedLocal is the local state a new primary assumes for a target until
// its node reports: the one stored with the chain, or one consistent with the
// public state for chains stored without it.
func persistedLocal(tg routing.Target) routing.LocalState {
	if tg.Local != 0 {
		return tg.Local
	}
	switch tg.Public {
	case routing.Serving:
		return routing.UpToDate
	case routing.Syncing, routing.Waiting:
		return routing.Online
	}
	return routing.LocalOffline
}

// node returns the state of node id, creating it with its liveness clock at now.
func (t *term) node(id routing.NodeID, now time.Time) *nodeState {
	n := t.nodes[id]
	if n == nil {
		n = &nodeState{last: now, hosts: map[routing.TargetID]bool{}}
		t.nodes[id] = n
	}
	return n
}

// bootstrapping reports whether the term is still in its bootstrapping window.
func (t *term) bootstrapping(now time.Time) bool { return now.Before(t.bootUntil) }

// alive reports whether n has heartbeated within timeout (always, while
// bootstrapping: a new primary declares nobody failed before it had the time
// to hear from everyone).
func (t *term) alive(n *nodeState, now time.Time, timeout time.Duration) bool {
	return t.bootstrapping(now) || now.Sub(n.last) <= timeout
}

// fullFunc says whether a target's node last reported its disk full.
func (t *term) fullFunc() func(routing.TargetID) bool {
	return func(id routing.TargetID) bool { return t.targets[id].full }
}

// localFunc returns the local state of each target as the chain rule must
// see it at now (see localOf).
func (t *term) localFunc(now time.Time, timeout time.Duration) func(routing.TargetID) routing.LocalState {
	return func(id routing.TargetID) routing.LocalState { return t.localOf(id, now, timeout, t.held[id]) }
}

// localOf is target id's local state for the chain rule: LocalOffline when
// held, never reported, or its node is silent for longer than timeout;
// otherwise what its node reported.
func (t *term) localOf(id routing.TargetID, now time.Time, timeout time.Duration, held bool) routing.LocalState {
	if held {
		return routing.LocalOffline
	}
	ts, ok := t.targets[id]
	if !ok || ts.local == 0 {
		return routing.LocalOffline
	}
	n := t.nodes[ts.node]
	if n == nil || !t.alive(n, now, timeout) {
		return routing.LocalOffline
	}
	return ts.local
}

// detectFailures marks nodes silent for longer than timeout as failed and
// returns the ones newly failed (for the log).
func (t *term) detectFailures(now time.Time, timeout time.Duration) []routing.NodeID {
	var out []routing.NodeID
	for id, n := range t.nodes {
		if !n.failed && !t.alive(n, now, timeout) {
			n.failed = true
			out = append(out, id)
		}
	}
	return out
}

// adopt gives the targets of new chains a grace period: until their node
// reports (or stays silent for T), they count as up to date, so a fresh
// chain does not fail before its storage services have heartbeated once.
func (t *term) adopt(targets []routing.Target, now time.Time) {
	for _, tg := range targets {
		n := t.node(tg.Node, now)
		if ts, ok := t.targets[tg.ID]; ok && n.heard && ts.node == tg.Node {
			continue // its node reported it already: the report stands
		}
		t.targets[tg.ID] = targetState{node: tg.Node, local: routing.UpToDate}
		n.hosts[tg.ID] = true
	}
}
