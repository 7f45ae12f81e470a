package mgmtd

import (
	"context"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/etcdkv"
	"github.com/flyfs/flyfs/core/kv/etcdkv/etcdtest"
	"github.com/flyfs/flyfs/core/routing"
)

// TestOverEtcd runs three mgmtd with a client connection to etcd each, as
// separate processes would: one primary, which a crash hands over, and the
// new primary keeps the chains and fails a silent node.
func TestOverEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	e := etcdtest.Start(t)
	open := func() *kv.DB {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		db, err := etcdkv.Open(ctx, etcdkv.Options{Endpoints: []string{e.Endpoint}, Prefix: "/mgmtdtest/"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	c := newClusterOn(t, 3, timing{T: time.Second, L: 300 * time.Millisecond, Boot: 300 * time.Millisecond}, open(), open)
	old := c.primary()
	c.setChains(map[routing.ChainID][]routing.NodeID{1: {1, 2}, 2: {2, 1}})
	n1, n2 := c.runNode(1, upToDate(101, 202)), c.runNode(2, upToDate(102, 201))
	n1.waitBeats(2)
	n2.waitBeats(2)

	c.crash(old)
	next := c.primary()
	if next == old {
		t.Fatal("the crashed mgmtd is still primary")
	}
	n2.waitBeats(n2.accepted() + 2)
	n2.halt()
	waitFor(t, 10*time.Second, "node 2's targets offline", func() bool {
		in := c.routing()
		return layout(in.Chains[1]) == "101:serving 102:offline" && layout(in.Chains[2]) == "202:serving 201:offline"
	})
}
