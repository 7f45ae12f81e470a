package mgmtd

import (
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/routing"
)

// TestClientThroughFailover: the client library's routing source and primary
// caller keep working against real mgmtd while the primary dies.
func TestClientThroughFailover(t *testing.T) {
	c := newCluster(t, 2, timing{T: time.Minute, L: 150 * time.Millisecond})
	old := c.primary()
	src, err := client.NewMgmtdSource(c.ctx(), c.addrs, c.rc, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m := src.Mgmtd()

	resp, err := m.SetChains(c.ctx(), &mgmtdapi.SetChainsReq{Chains: []routing.Chain{chain(1, tgt(101, 1, 0), tgt(102, 2, 0))}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the source to see chain 1", func() bool {
		in := src.Current()
		return in.Version >= resp.RoutingVersion && in.Chains[1] != nil
	})

	c.crash(old)
	resp, err = m.SetChains(c.ctx(), &mgmtdapi.SetChainsReq{Chains: []routing.Chain{chain(2, tgt(201, 1, 0), tgt(202, 2, 0))}})
	if err != nil {
		t.Fatalf("SetChains after the primary died: %v", err)
	}
	waitFor(t, 5*time.Second, "the source to see chain 2", func() bool {
		in := src.Current()
		return in.Version >= resp.RoutingVersion && in.Chains[2] != nil && in.Chains[1] != nil
	})
	nodes, err := m.ListNodes(c.ctx())
	if err != nil || nodes.Partial {
		t.Fatalf("ListNodes: %+v, %v", nodes, err)
	}
	// The crashed mgmtd may still be listed until its registry entry
	// expires, but never as primary.
	primaries := 0
	for _, md := range nodes.Mgmtds {
		if md.Primary {
			primaries++
			if md.ID == old.ID() {
				t.Errorf("the dead mgmtd is listed as primary")
			}
		}
	}
	if primaries != 1 {
		t.Errorf("%d primaries listed: %+v", primaries, nodes.Mgmtds)
	}
}
