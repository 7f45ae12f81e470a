package mgmtd

import (
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// TestHeartbeatSequence: a heartbeat not newer than the last of the same
// process is refused; a restarted process (new incarnation) starts over; a
// mgmtd that is not primary redirects to the primary.
func TestHeartbeatSequence(t *testing.T) {
	c := newCluster(t, 2, timing{T: 10 * time.Second, L: 150 * time.Millisecond})
	p := c.primary()
	var other *Server
	for _, s := range c.servers {
		if s != p {
			other = s
		}
	}
	waitFor(t, 5*time.Second, "the other mgmtd to see the primary", func() bool { return other.primaryAddr() == c.addr(p) })
	hb := func(addr string, seq, inc uint64) error {
		_, err := c.api.Heartbeat(c.ctx(), addr, &mgmtdapi.HeartbeatReq{Node: 1, Addr: "n1:1", Seq: seq, Incarnation: inc})
		return err
	}
	steps := []struct {
		name     string
		addr     string
		seq, inc uint64
		want     rpc.Code
	}{
		{"first", c.addr(p), 5, 1, rpc.OK},
		{"newer", c.addr(p), 6, 1, rpc.OK},
		{"repeated", c.addr(p), 6, 1, mgmtdapi.CodeStaleHeartbeat},
		{"older", c.addr(p), 3, 1, mgmtdapi.CodeStaleHeartbeat},
		{"restarted process", c.addr(p), 1, 2, rpc.OK},
		{"after restart", c.addr(p), 2, 2, rpc.OK},
		{"to a non-primary", c.addr(other), 3, 2, mgmtdapi.CodeNotPrimary},
	}
	for _, st := range steps {
		err := hb(st.addr, st.seq, st.inc)
		if codeOf(err) != st.want {
			t.Errorf("%s: %v, want %v", st.name, err, st.want)
		}
		if st.want == mgmtdapi.CodeNotPrimary && mgmtdapi.NotPrimaryAddr(err) != c.addr(p) {
			t.Errorf("%s: redirect names %q, want %q", st.name, mgmtdapi.NotPrimaryAddr(err), c.addr(p))
		}
	}
	if got := c.routing().Nodes[1].Addr; got != "n1:1" {
		t.Errorf("node 1 address in routing: %q", got)
	}
	resp, err := c.api.Heartbeat(c.ctx(), c.addr(p), &mgmtdapi.HeartbeatReq{Node: 1, Addr: "n1:2", Seq: 3, Incarnation: 2})
	if err != nil {
		t.Fatal(err)
	}
	if info := c.routing(); info.Nodes[1].Addr != "n1:2" || resp.RoutingVersion != info.Version {
		t.Errorf("after an address change: routing has %q at version %d, heartbeat answered version %d", info.Nodes[1].Addr, info.Version, resp.RoutingVersion)
	}
	if resp.LeaseMillis != 10000 || resp.LeaseSeconds != 10 {
		t.Errorf("heartbeat answered T = %d ms / %d s", resp.LeaseMillis, resp.LeaseSeconds)
	}
}

// TestSilentNodeFailsItsTargets: a node silent for T has its target taken out
// of the chain (offline at the tail, or lastsrv when it was the last
// serving one), and the chain and routing versions grow. Nodes of a case go
// silent one step at a time, each step's layout reached before the next:
// nodes halted together stop beating up to a beat interval apart, so a
// loaded machine may see them fail in one scan or in several, and the
// layout differs by that order (routing's own tests cover one scan).
func TestSilentNodeFailsItsTargets(t *testing.T) {
	type step struct {
		halt routing.NodeID
		want string
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"head", []step{{1, "102:serving 103:serving 101:offline"}}},
		{"middle", []step{{2, "101:serving 103:serving 102:offline"}}},
		{"tail", []step{{3, "101:serving 102:serving 103:offline"}}},
		{"all", []step{
			{1, "102:serving 103:serving 101:offline"},
			{2, "103:serving 102:offline 101:offline"},
			{3, "103:lastsrv 102:offline 101:offline"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 1, timing{T: 400 * time.Millisecond, L: 150 * time.Millisecond, Boot: 100 * time.Millisecond})
			c.primary()
			c.setChains(map[routing.ChainID][]routing.NodeID{1: {1, 2, 3}})
			nodes := map[routing.NodeID]*fakeNode{}
			for _, id := range []routing.NodeID{1, 2, 3} {
				nodes[id] = c.runNode(id, upToDate(routing.TargetID(100+id)))
			}
			for _, n := range nodes {
				n.waitBeats(2)
			}
			before := c.routing()
			if got := layout(before.Chains[1]); got != "101:serving 102:serving 103:serving" {
				t.Fatalf("before: %s", got)
			}
			for _, st := range tc.steps {
				nodes[st.halt].halt()
				waitFor(t, 5*time.Second, st.want, func() bool { return layout(c.routing().Chains[1]) == st.want })
			}
			final := tc.steps[len(tc.steps)-1].want
			after := c.routing()
			if after.Version <= before.Version || after.Chains[1].Version <= before.Chains[1].Version {
				t.Errorf("versions did not grow: routing %d→%d, chain %d→%d",
					before.Version, after.Version, before.Chains[1].Version, after.Chains[1].Version)
			}
			for _, tg := range after.Chains[1].Targets {
				if tg.Public == routing.Offline && tg.Local != routing.LocalOffline {
					t.Errorf("target %d published offline with local state %s", tg.ID, tg.Local)
				}
			}
			// It stays so: nothing flaps while the rest keep heartbeating.
			time.Sleep(3 * c.cfg.ScanInterval)
			if got := layout(c.routing().Chains[1]); got != final {
				t.Errorf("later: %s", got)
			}
		})
	}
}
