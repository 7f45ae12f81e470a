package mgmtd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

func chain(id routing.ChainID, targets ...routing.Target) routing.Chain {
	return routing.Chain{ID: id, Targets: targets}
}

func tgt(id routing.TargetID, node routing.NodeID, disk int) routing.Target {
	return routing.Target{ID: id, Node: node, Disk: disk}
}

// TestSetChainsAndGetRouting: chains set through the primary come back from
// every mgmtd with versions, targets serving and up to date, nodes and disks;
// a caller with the newest version gets nothing; repeating a request changes
// nothing; replacing a chain keeps its targets' states and adds new ones
// offline at the tail.
func TestSetChainsAndGetRouting(t *testing.T) {
	c := newCluster(t, 2, timing{T: time.Minute, L: 150 * time.Millisecond})
	p := c.primary()
	ctx := c.ctx()

	empty, err := c.api.GetRouting(ctx, c.addr(p), 0)
	if err != nil || empty.Info == nil || empty.Info.Version != 0 || len(empty.Info.Chains) != 0 {
		t.Fatalf("new cluster routing: %+v, %v", empty, err)
	}
	req := &mgmtdapi.SetChainsReq{Chains: []routing.Chain{
		chain(1, tgt(101, 1, 0), tgt(102, 2, 1)),
		chain(2, tgt(201, 2, 0), tgt(202, 1, 1)),
	}}
	resp, err := c.api.SetChains(ctx, c.addr(p), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.servers {
		got, err := c.api.GetRouting(ctx, c.addr(s), 0)
		if err != nil || got.Info == nil {
			t.Fatalf("%s: %+v, %v", s.ID(), got, err)
		}
		if got.Info.Version != resp.RoutingVersion || len(got.Info.Chains) != 2 {
			t.Fatalf("%s: version %d with %d chains, want %d with 2", s.ID(), got.Info.Version, len(got.Info.Chains), resp.RoutingVersion)
		}
		for _, want := range req.Chains {
			have := got.Info.Chains[want.ID]
			if have == nil || have.Version != 1 || len(have.Targets) != len(want.Targets) {
				t.Fatalf("%s: chain %d = %+v", s.ID(), want.ID, have)
			}
			for i, wt := range want.Targets {
				ht := have.Targets[i]
				if ht.ID != wt.ID || ht.Node != wt.Node || ht.Disk != wt.Disk || ht.Public != routing.Serving || ht.Local != routing.UpToDate {
					t.Errorf("%s: chain %d target %d = %+v", s.ID(), want.ID, i, ht)
				}
			}
		}
		cur, err := c.api.GetRouting(ctx, c.addr(s), got.Info.Version)
		if err != nil || cur.Info != nil {
			t.Errorf("%s: Have=current returned %+v, %v; want nothing", s.ID(), cur, err)
		}
		old, err := c.api.GetRouting(ctx, c.addr(s), got.Info.Version-1)
		if err != nil || old.Info == nil {
			t.Errorf("%s: Have=older returned %+v, %v", s.ID(), old, err)
		}
	}

	again, err := c.api.SetChains(ctx, c.addr(p), req)
	if err != nil || again.RoutingVersion != resp.RoutingVersion {
		t.Errorf("repeated SetChains: version %d→%v, %v", resp.RoutingVersion, again, err)
	}

	// Replace chain 2: 201 stays, 203 joins on node 3, 202 leaves.
	rep, err := c.api.SetChains(ctx, c.addr(p), &mgmtdapi.SetChainsReq{Chains: []routing.Chain{chain(2, tgt(203, 3, 0), tgt(201, 2, 0))}})
	if err != nil {
		t.Fatal(err)
	}
	info := c.routing()
	if info.Version != rep.RoutingVersion || rep.RoutingVersion <= resp.RoutingVersion {
		t.Errorf("replace: routing version %d, answer %d, before %d", info.Version, rep.RoutingVersion, resp.RoutingVersion)
	}
	if got := layout(info.Chains[2]); got != "201:serving 203:offline" || info.Chains[2].Version != 2 {
		t.Errorf("replaced chain 2: v%d %s", info.Chains[2].Version, got)
	}
}

// TestSetChainsRejects: requests no cluster can hold name their problem.
func TestSetChainsRejects(t *testing.T) {
	c := newCluster(t, 1, timing{T: time.Minute, L: 150 * time.Millisecond})
	p := c.primary()
	c.setChains(map[routing.ChainID][]routing.NodeID{1: {1, 2}}) // targets 101, 102
	cases := []struct {
		name   string
		chains []routing.Chain
	}{
		{"nothing", nil},
		{"chain 0", []routing.Chain{chain(0, tgt(1, 1, 0))}},
		{"no targets", []routing.Chain{chain(5)}},
		{"target 0", []routing.Chain{chain(5, tgt(0, 1, 0))}},
		{"same chain twice", []routing.Chain{chain(5, tgt(501, 1, 0)), chain(5, tgt(502, 1, 0))}},
		{"target in two chains", []routing.Chain{chain(5, tgt(501, 1, 0)), chain(6, tgt(501, 2, 0))}},
		{"two replicas on one node", []routing.Chain{chain(5, tgt(501, 1, 0), tgt(502, 1, 1))}},
		{"target of another chain", []routing.Chain{chain(5, tgt(101, 3, 0))}},
	}
	for _, tc := range cases {
		_, err := c.api.SetChains(c.ctx(), c.addr(p), &mgmtdapi.SetChainsReq{Chains: tc.chains})
		if codeOf(err) != rpc.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", tc.name, err)
		}
	}
	if n := len(c.routing().Chains); n != 1 {
		t.Errorf("%d chains after rejected requests", n)
	}
}

// TestHoldTarget: a held target goes offline at once and stays offline while
// its node reports it up to date, also under a new primary; released, it
// comes back through syncing to serving as its node reports online, then up
// to date.
func TestHoldTarget(t *testing.T) {
	c := newCluster(t, 2, timing{T: 600 * time.Millisecond, L: 150 * time.Millisecond, Boot: 200 * time.Millisecond})
	p := c.primary()
	c.setChains(map[routing.ChainID][]routing.NodeID{1: {1, 2, 3}})
	n1, n2, n3 := c.runNode(1, upToDate(101)), c.runNode(2, upToDate(102)), c.runNode(3, upToDate(103))
	for _, n := range []*fakeNode{n1, n2, n3} {
		n.waitBeats(2)
	}
	ctx := c.ctx()
	if _, err := c.api.SetTargetHeld(ctx, c.addr(p), &mgmtdapi.SetTargetHeldReq{Target: 999, Held: true}); codeOf(err) != mgmtdapi.CodeUnknownTarget {
		t.Errorf("holding an unknown target: %v", err)
	}
	resp, err := c.mgmtd().SetTargetHeld(ctx, &mgmtdapi.SetTargetHeldReq{Target: 102, Held: true})
	if err != nil {
		t.Fatal(err)
	}
	info := c.routing()
	if info.Version < resp.RoutingVersion || layout(info.Chains[1]) != "101:serving 103:serving 102:offline" {
		t.Fatalf("after hold (answer v%d): v%d %s", resp.RoutingVersion, info.Version, layout(info.Chains[1]))
	}

	// A new primary keeps the hold.
	c.crash(p)
	c.primary()
	n2.waitBeats(n2.accepted() + 3)
	time.Sleep(c.cfg.Bootstrapping + 3*c.cfg.ScanInterval)
	if got := layout(c.routing().Chains[1]); got != "101:serving 103:serving 102:offline" {
		t.Fatalf("under the new primary: %s", got)
	}

	// Release: the node reports the target online (it must resync), so it
	// syncs, then reports it up to date and it serves.
	n2.set(102, routing.Online)
	n2.waitBeats(n2.accepted() + 2)
	if _, err := c.mgmtd().SetTargetHeld(ctx, &mgmtdapi.SetTargetHeldReq{Target: 102, Held: false}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "102 syncing", func() bool {
		return layout(c.routing().Chains[1]) == "101:serving 103:serving 102:syncing"
	})
	n2.set(102, routing.UpToDate)
	waitFor(t, 5*time.Second, "102 serving", func() bool {
		return layout(c.routing().Chains[1]) == "101:serving 103:serving 102:serving"
	})
}

// TestListNodes: the primary lists storage nodes with liveness and reports,
// and every mgmtd with the primary marked; another mgmtd redirects.
func TestListNodes(t *testing.T) {
	c := newCluster(t, 2, timing{T: 400 * time.Millisecond, L: 150 * time.Millisecond, Boot: 100 * time.Millisecond})
	p := c.primary()
	c.setChains(map[routing.ChainID][]routing.NodeID{1: {1, 2}})
	n1, n2 := c.runNode(1, upToDate(101)), c.runNode(2, upToDate(102))
	n1.waitBeats(2)
	n2.waitBeats(2)
	n2.halt()
	waitFor(t, 5*time.Second, "node 2 failed", func() bool { return layout(c.routing().Chains[1]) == "101:serving 102:offline" })

	resp, err := c.api.ListNodes(c.ctx(), c.addr(p))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Nodes) != 2 || resp.Partial {
		t.Fatalf("nodes: %+v (partial %v)", resp.Nodes, resp.Partial)
	}
	a, b := resp.Nodes[0], resp.Nodes[1]
	if a.Node != 1 || !a.Alive || a.Addr != "node1:9100" || a.LastHeartbeat == 0 || len(a.Targets) != 1 || a.Targets[0].Target != 101 {
		t.Errorf("node 1: %+v", a)
	}
	if b.Node != 2 || b.Alive || b.LastHeartbeat == 0 {
		t.Errorf("node 2: %+v", b)
	}
	if len(resp.Mgmtds) != 2 {
		t.Fatalf("mgmtds: %+v", resp.Mgmtds)
	}
	for _, m := range resp.Mgmtds {
		if m.Primary != (m.ID == p.ID()) {
			t.Errorf("mgmtd %+v (primary is %s)", m, p.ID())
		}
	}
	for _, s := range c.servers {
		if s != p {
			waitFor(t, 5*time.Second, "the other mgmtd to see the primary", func() bool { return s.primaryAddr() == c.addr(p) })
			_, err := c.api.ListNodes(c.ctx(), c.addr(s))
			if codeOf(err) != mgmtdapi.CodeNotPrimary || mgmtdapi.NotPrimaryAddr(err) != c.addr(p) {
				t.Errorf("ListNodes on %s: %v", s.ID(), err)
			}
		}
	}
}

// TestHoldLastServing: holding a chain's last serving replica offline is
// refused, naming the chain, unless forced; holding one of several is not.
func TestHoldLastServing(t *testing.T) {
	c := newCluster(t, 1, timing{T: 600 * time.Millisecond, L: 150 * time.Millisecond, Boot: 200 * time.Millisecond})
	c.setChains(map[routing.ChainID][]routing.NodeID{1: {1, 2}})
	n1, n2 := c.runNode(1, upToDate(101)), c.runNode(2, upToDate(102))
	n1.waitBeats(2)
	n2.waitBeats(2)
	ctx := c.ctx()
	if _, err := c.mgmtd().SetTargetHeld(ctx, &mgmtdapi.SetTargetHeldReq{Target: 102, Held: true, By: "the test"}); err != nil {
		t.Fatalf("holding one of two serving replicas: %v", err)
	}
	if nodes, err := c.mgmtd().ListNodes(ctx); err != nil || len(nodes.Holds) != 1 || nodes.Holds[0].Target != 102 || nodes.Holds[0].By != "the test" || nodes.Holds[0].At == 0 {
		t.Fatalf("the hold and who made it: %+v %v", nodes, err)
	}
	_, err := c.mgmtd().SetTargetHeld(ctx, &mgmtdapi.SetTargetHeldReq{Target: 101, Held: true})
	if codeOf(err) != mgmtdapi.CodeLastServing || !strings.Contains(err.Error(), "chain 1") {
		t.Fatalf("holding the last serving replica: %v", err)
	}
	if got := layout(c.routing().Chains[1]); got != "101:serving 102:offline" {
		t.Fatalf("after the refusal: %s", got)
	}
	if _, err := c.mgmtd().SetTargetHeld(ctx, &mgmtdapi.SetTargetHeldReq{Target: 101, Held: true, Force: true}); err != nil {
		t.Fatalf("forced: %v", err)
	}
	if got := layout(c.routing().Chains[1]); strings.Contains(got, "serving") {
		t.Fatalf("after the forced hold: %s", got)
	}
}

// TestNodeMaintenance: a node's maintenance holds every target its chains
// can spare and skips a chain's last serving replica; a dry run says the
// same and changes nothing; ending it releases what it held.
func TestNodeMaintenance(t *testing.T) {
	c := newCluster(t, 1, timing{T: 600 * time.Millisecond, L: 150 * time.Millisecond, Boot: 200 * time.Millisecond})
	c.setChains(map[routing.ChainID][]routing.NodeID{1: {1, 2}, 2: {2, 3}, 3: {2}})
	n1, n2, n3 := c.runNode(1, upToDate(101)), c.runNode(2, upToDate(102, 201, 301)), c.runNode(3, upToDate(202))
	for _, n := range []*fakeNode{n1, n2, n3} {
		n.waitBeats(2)
	}
	ctx := c.ctx()
	summary := func(r *mgmtdapi.SetNodeHeldResp) string {
		var parts []string
		for _, p := range r.Targets {
			what := "changed"
			if !p.Changed {
				what = p.Skipped
			}
			parts = append(parts, fmt.Sprintf("%d:%s (%d serving)", p.Target, what, p.ChainServing))
		}
		return strings.Join(parts, ", ")
	}
	const planned = "102:changed (1 serving), 201:changed (1 serving), 301:the last serving replica of chain 3 (1 serving)"
	before := c.routing()
	dry, err := c.mgmtd().SetNodeHeld(ctx, &mgmtdapi.SetNodeHeldReq{Node: 2, Held: true, DryRun: true})
	if err != nil || summary(dry) != planned {
		t.Fatalf("dry run: %v %v", summary(dry), err)
	}
	if after := c.routing(); after.Version != before.Version {
		t.Fatalf("a dry run changed routing: v%d to v%d", before.Version, after.Version)
	}
	resp, err := c.mgmtd().SetNodeHeld(ctx, &mgmtdapi.SetNodeHeldReq{Node: 2, Held: true})
	if err != nil || summary(resp) != planned {
		t.Fatalf("maintenance: %v %v", summary(resp), err)
	}
	info := c.routing()
	if got := layout(info.Chains[1]) + " | " + layout(info.Chains[2]) + " | " + layout(info.Chains[3]); got != "101:serving 102:offline | 202:serving 201:offline | 301:serving" {
		t.Fatalf("chains in maintenance: %s", got)
	}
	again, err := c.mgmtd().SetNodeHeld(ctx, &mgmtdapi.SetNodeHeldReq{Node: 2, Held: true})
	if err != nil || !strings.HasPrefix(summary(again), "102:already held") {
		t.Fatalf("maintenance again: %v %v", summary(again), err)
	}
	end, err := c.mgmtd().SetNodeHeld(ctx, &mgmtdapi.SetNodeHeldReq{Node: 2, Held: false, By: "the test"})
	if err != nil || !strings.Contains(summary(end), "102:changed") || !strings.Contains(summary(end), "301:not held") {
		t.Fatalf("end of maintenance: %v %v", summary(end), err)
	}
	// The audit trail: newest first, the dry run not in it.
	trail, err := c.mgmtd().ListAudit(ctx, &mgmtdapi.ListAuditReq{Limit: 10})
	if err != nil || len(trail.Records) != 4 {
		t.Fatalf("audit trail: %+v %v", trail, err)
	}
	if r := trail.Records[0]; r.By != "the test" || r.Action != "end maintenance of node 2: released 102, 201" || r.Result != "ok" {
		t.Errorf("newest record: %+v", r)
	}
	if r := trail.Records[2]; !strings.HasPrefix(r.Action, "start maintenance of node 2: held 102, 201; kept 301 (the last serving replica of chain 3)") {
		t.Errorf("the maintenance start: %+v", r)
	}
}
