package routing

import (
	"strings"
	"testing"
)

func TestTableSpecBuild(t *testing.T) {
	ok := TableSpec{Nodes: []NodeID{1, 2, 3}, DisksPerNode: 2, Replicas: 2, Chains: 6, FirstChain: 4}
	tb, err := ok.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Chains) != 6 || len(tb.Disks) != 6 || tb.Chains[0].ID != 4 || tb.Chains[5].ID != 9 {
		t.Fatalf("table %+v", tb)
	}
	if got := tb.Chains[1].Targets[1].ID; got != 502 {
		t.Fatalf("chain 5's second target is %d, want 502", got)
	}
	if err := Check(tb.Disks, 2, tb.Rows); err != nil {
		t.Fatal(err)
	}
	again, _ := ok.Build()
	if Explain(tb.Disks, tb.Rows).String() != Explain(again.Disks, again.Rows).String() {
		t.Fatal("the same spec built two tables")
	}
	for _, c := range []struct {
		name string
		mend func(*TableSpec)
		want string
	}{
		{"no nodes", func(s *TableSpec) { s.Nodes = nil }, "no storage nodes"},
		{"no chains", func(s *TableSpec) { s.Chains = 0 }, "0 chains"},
		{"too many chains", func(s *TableSpec) { s.Chains = MaxTableChains + 1 }, "want 1..100000"},
		{"no disks", func(s *TableSpec) { s.DisksPerNode = 0 }, "0 disks per node"},
		{"too many disks", func(s *TableSpec) { s.DisksPerNode = MaxTableDisks/3 + 1 }, "at most 16384 disks"},
		{"too many replicas", func(s *TableSpec) { s.Replicas = 100 }, "100 replicas: want 1..99"},
		{"more replicas than nodes", func(s *TableSpec) { s.Replicas = 4 }, ""},
		{"chain 0", func(s *TableSpec) { s.FirstChain = 0 }, "chain id 0 is reserved"},
		{"ids past 32 bits", func(s *TableSpec) { s.FirstChain = 42_949_672 }, "would not fit 32 bits"},
		{"node twice", func(s *TableSpec) { s.Nodes = []NodeID{1, 2, 1} }, "node 1 listed twice"},
		{"node 0", func(s *TableSpec) { s.Nodes = []NodeID{0, 2, 3} }, "node 0"},
		{"unknown layout", func(s *TableSpec) { s.Layout = "random" }, `layout "random"`},
	} {
		s := ok
		s.Nodes = append([]NodeID(nil), ok.Nodes...)
		c.mend(&s)
		_, err := s.Build()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

func TestNewTableOverlap(t *testing.T) {
	tb, err := TableSpec{Nodes: []NodeID{1, 2}, DisksPerNode: 1, Replicas: 2, Chains: 2, Layout: "simple", FirstChain: 3}.Build()
	if err != nil {
		t.Fatal(err)
	}
	info := &Info{Chains: map[ChainID]*Chain{1: {ID: 1, Targets: []Target{{ID: 101}, {ID: 102}}}}}
	if id := tb.Overlap(info); id != 0 || info.MaxChainID() != 1 {
		t.Fatalf("overlap %d, max %d", id, info.MaxChainID())
	}
	info.Chains[4] = &Chain{ID: 4}
	if id := tb.Overlap(info); id != 4 {
		t.Fatalf("overlap %d, want chain 4", id)
	}
	delete(info.Chains, 4)
	info.Chains[9] = &Chain{ID: 9, Targets: []Target{{ID: 301}}} // a target made by hand
	if id := tb.Overlap(info); id != 3 {
		t.Fatalf("overlap %d, want chain 3 (its target 301 exists)", id)
	}
}
