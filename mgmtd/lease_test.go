package mgmtd

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/routing"
)

// TestOnePrimary: of several mgmtd on one store exactly one acts as primary,
// and never two at once.
func TestOnePrimary(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d mgmtd", n), func(t *testing.T) {
			c := newCluster(t, n, timing{T: 600 * time.Millisecond, L: 150 * time.Millisecond})
			p := c.primary()
			end := time.Now().Add(6 * c.cfg.LeaseLength)
			for time.Now().Before(end) {
				if ps := c.primaries(); len(ps) > 1 {
					t.Fatalf("%d primaries at once", len(ps))
				}
				time.Sleep(5 * time.Millisecond)
			}
			if ps := c.primaries(); len(ps) != 1 || ps[0] != p {
				t.Fatalf("primary moved without a failure: %v then %v", p.ID(), ps)
			}
			// Every mgmtd names the same primary.
			for _, s := range c.servers {
				resp, err := c.api.GetPrimary(c.ctx(), c.addr(s))
				if err != nil || resp.ID != p.ID() || resp.Addr != c.addr(p) {
					t.Errorf("%s says the primary is %+v, %v; want %s at %s", s.ID(), resp, err, p.ID(), c.addr(p))
				}
			}
		})
	}
}

// TestFailover: when the primary dies (crash: its lease must expire; close:
// it gives the lease up), another takes over within a few lease periods and
// keeps scanning: a node that stops heartbeating afterwards is declared
// failed and its chain changes.
func TestFailover(t *testing.T) {
	for _, how := range []string{"crash", "close"} {
		t.Run(how, func(t *testing.T) {
			c := newCluster(t, 3, timing{T: 600 * time.Millisecond, L: 150 * time.Millisecond, Boot: 300 * time.Millisecond})
			old := c.primary()
			c.setChains(map[routing.ChainID][]routing.NodeID{1: {1, 2, 3}})
			nodes := []*fakeNode{c.runNode(1, upToDate(101)), c.runNode(2, upToDate(102)), c.runNode(3, upToDate(103))}
			for _, n := range nodes {
				n.waitBeats(2)
			}
			if how == "crash" {
				c.crash(old)
			} else {
				c.close(old)
			}
			var next *Server
			waitFor(t, 8*c.cfg.LeaseLength+time.Second, "a new primary", func() bool {
				ps := c.primaries()
				if len(ps) == 1 && ps[0] != old {
					next = ps[0]
				}
				return next != nil
			})
			for _, n := range nodes {
				n.waitBeats(n.accepted() + 2) // the nodes found the new primary
			}
			before := c.routing()
			nodes[1].halt()
			waitFor(t, 5*time.Second, "target 102 offline", func() bool {
				return layout(c.routing().Chains[1]) == "101:serving 103:serving 102:offline"
			})
			after := c.routing()
			if after.Version <= before.Version || after.Chains[1].Version <= before.Chains[1].Version {
				t.Errorf("versions did not grow: routing %d→%d, chain %d→%d",
					before.Version, after.Version, before.Chains[1].Version, after.Chains[1].Version)
			}
			if ps := c.primaries(); len(ps) != 1 || ps[0] != next {
				t.Errorf("primary changed again during the test")
			}
		})
	}
}

// TestDeposedPrimaryCannotWrite: once the lease is taken from a primary, its
// writes fail and change nothing, even a write that passed the in-memory
// primary check before the lease moved.
func TestDeposedPrimaryCannotWrite(t *testing.T) {
	c := newCluster(t, 1, timing{T: 10 * time.Second, L: 3 * time.Second})
	p := c.primary()
	c.setChains(map[routing.ChainID][]routing.NodeID{1: {1, 2}})
	tm := p.primaryTerm()
	base := c.routing()

	// Steal the lease as another mgmtd would after an expiry.
	ctx := c.ctx()
	err := c.db.Run(ctx, func(tx kv.Txn) error {
		rec, _, err := readLease(ctx, tx)
		if err != nil {
			return err
		}
		now := time.Now()
		tx.Set(leaseKey, encode(leaseRecord{Holder: "thief", Addr: "thief:1", Instance: 99, Term: rec.Term + 1,
			Start: now.UnixNano(), Expiry: now.Add(time.Hour).UnixNano()}))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A write computed as primary, committed after the theft.
	bad := base.Chains[1]
	changed := &routing.Chain{ID: 1, Version: bad.Version + 1, Targets: []routing.Target{bad.Targets[1], bad.Targets[0]}}
	p.writeMu.Lock()
	_, err = p.write(ctx, tm, base, &change{chains: []*routing.Chain{changed}, why: "test"})
	p.writeMu.Unlock()
	if codeOf(err) != mgmtdapi.CodeNotPrimary {
		t.Fatalf("write after the theft: %v, want NotPrimary", err)
	}
	if p.IsPrimary() {
		t.Error("still acts as primary after a write found its lease gone")
	}
	// The same through the API.
	_, err = c.api.SetChains(ctx, c.addr(p), &mgmtdapi.SetChainsReq{Chains: []routing.Chain{{ID: 2, Targets: []routing.Target{{ID: 201, Node: 1}}}}})
	if codeOf(err) != mgmtdapi.CodeNotPrimary || mgmtdapi.NotPrimaryAddr(err) != "thief:1" {
		t.Errorf("SetChains on the deposed primary: %v (redirect %q), want NotPrimary naming thief:1", err, mgmtdapi.NotPrimaryAddr(err))
	}
	after := c.routing()
	if after.Version != base.Version || layout(after.Chains[1]) != layout(base.Chains[1]) || len(after.Chains) != 1 {
		t.Errorf("routing changed after the theft: v%d %v → v%d %v (%d chains)", base.Version, layout(base.Chains[1]), after.Version, layout(after.Chains[1]), len(after.Chains))
	}
}

// TestBootstrappingAfterTakeover: a node that went silent under the old
// primary is not declared failed by the new one before T after the takeover,
// however stale the old primary's clock for it was; routing says
// Bootstrapping meanwhile; afterwards the node is declared failed.
func TestBootstrappingAfterTakeover(t *testing.T) {
	T := time.Second
	c := newCluster(t, 2, timing{T: T, L: 150 * time.Millisecond})
	old := c.primary()
	c.setChains(map[routing.ChainID][]routing.NodeID{1: {1, 2}})
	n1, n2 := c.runNode(1, upToDate(101)), c.runNode(2, upToDate(102))
	n1.waitBeats(2)
	n2.waitBeats(2)
	n2.halt()
	silentSince := time.Now()
	time.Sleep(T * 6 / 10)
	if got := layout(c.routing().Chains[1]); got != "101:serving 102:serving" {
		t.Fatalf("setup too slow: node 2 failed before the takeover (%s)", got)
	}
	c.crash(old)
	next := c.primary()
	next.mu.Lock()
	since := next.term.since
	next.mu.Unlock()
	t.Logf("takeover %v after node 2 went silent", since.Sub(silentSince).Round(time.Millisecond))

	checks := 0
	for time.Since(since) < T*8/10 {
		resp, err := c.api.GetRouting(c.ctx(), c.addr(next), 0)
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(since) >= T*8/10 {
			break // the answer may have come after the window we check
		}
		if !resp.Bootstrapping {
			t.Fatalf("%v after the takeover routing is not bootstrapping", time.Since(since))
		}
		if got := layout(resp.Info.Chains[1]); got != "101:serving 102:serving" {
			t.Fatalf("%v after the takeover (node silent %v) the chain is %s", time.Since(since), time.Since(silentSince), got)
		}
		checks++
		time.Sleep(20 * time.Millisecond)
	}
	if checks == 0 {
		t.Fatal("no check ran inside the window")
	}
	waitFor(t, 5*time.Second, "node 2 declared failed", func() bool {
		return layout(c.routing().Chains[1]) == "101:serving 102:offline"
	})
	resp, err := c.api.GetRouting(context.Background(), c.addr(next), 0)
	if err != nil || resp.Bootstrapping {
		t.Errorf("after the window: bootstrapping %v, %v", resp != nil && resp.Bootstrapping, err)
	}
}

// TestLateRenewalKeepsTheTerm: a renewal that comes after the lease lapsed
// (a loaded store, a paused process) finds the lease still its own and
// extends it in the same term: the primary does not depose itself and
// reload everything in a new term.
func TestLateRenewalKeepsTheTerm(t *testing.T) {
	c := newCluster(t, 1, timing{T: 600 * time.Millisecond, L: 150 * time.Millisecond})
	p := c.primary()
	term := p.primaryTerm().id
	// The lease lapses: its record says it expired a while ago, as after a
	// renewal round that ran late.
	ctx := context.Background()
	err := p.cfg.KV.Run(ctx, func(tx kv.Txn) error {
		rec, _, err := readLease(ctx, tx)
		if err != nil {
			return err
		}
		rec.Expiry = time.Now().Add(-time.Second).UnixNano()
		tx.Set(leaseKey, encode(rec))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p.renewLease()
	pt := p.primaryTerm()
	if pt == nil || pt.id != term {
		t.Fatalf("after a late renewal: term %v, want still primary in term %d", pt, term)
	}
}

// TestStandbyWaitsOutAStoreStall: after a stall of the store every lease
// record looks expired. The standby's first round after it must not take the
// lease: the holder renews in its own term first, and no primary changes.
func TestStandbyWaitsOutAStoreStall(t *testing.T) {
	// A long lease keeps the servers' own rounds (every L/3) out of the way
	// of the rounds this test runs.
	c := newCluster(t, 2, timing{T: 40 * time.Second, L: 10 * time.Second})
	p := c.primary()
	term := p.primaryTerm().id
	var standby *Server
	for _, s := range c.servers {
		if s != p {
			standby = s
		}
	}
	ctx := context.Background()
	err := p.cfg.KV.Run(ctx, func(tx kv.Txn) error {
		rec, _, err := readLease(ctx, tx)
		if err != nil {
			return err
		}
		rec.Expiry = time.Now().Add(-time.Millisecond).UnixNano() // as the stall leaves it
		tx.Set(leaseKey, encode(rec))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	standby.renewLease()
	if standby.primaryTerm() != nil {
		t.Fatal("the standby took the lease on its first round after the stall")
	}
	p.renewLease()
	standby.renewLease()
	if pt := p.primaryTerm(); pt == nil || pt.id != term || standby.primaryTerm() != nil {
		t.Fatalf("after the stall: primary term %v (want %d), standby primary %v", pt, term, standby.primaryTerm() != nil)
	}
}
