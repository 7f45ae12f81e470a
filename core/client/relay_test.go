package client

import (
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/routing"
)

func TestWriteEntry(t *testing.T) {
	chain := &routing.Chain{ID: 1, Targets: []routing.Target{
		{ID: 11, Node: 1, Public: routing.Serving},
		{ID: 12, Node: 2, Public: routing.Syncing},
		{ID: 13, Node: 3, Public: routing.Serving},
		{ID: 14, Node: 4, Public: routing.Serving},
	}}
	head := chain.Targets[0]
	for _, tc := range []struct {
		name      string
		suspect   []routing.NodeID
		wantNode  routing.NodeID
		wantRelay bool
	}{
		{"head answers: straight to it", nil, 1, false},
		{"others suspect, head not: straight to it", []routing.NodeID{3, 4}, 1, false},
		{"head suspect: the first serving replica after it relays", []routing.NodeID{1}, 3, true},
		{"a syncing replica never relays", []routing.NodeID{1, 3}, 4, true},
		{"every way in suspect: the head again", []routing.NodeID{1, 3, 4}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sus := map[routing.NodeID]bool{}
			for _, n := range tc.suspect {
				sus[n] = true
			}
			node, relay := writeEntry(chain, head, func(n routing.NodeID) bool { return sus[n] })
			if node != tc.wantNode || relay != tc.wantRelay {
				t.Fatalf("got node %d relay %v, want node %d relay %v", node, relay, tc.wantNode, tc.wantRelay)
			}
		})
	}
}

func TestWriteEntrySameNode(t *testing.T) {
	// A replica on the head's own node is no other way in.
	chain := &routing.Chain{ID: 1, Targets: []routing.Target{
		{ID: 11, Node: 1, Public: routing.Serving},
		{ID: 12, Node: 1, Public: routing.Serving},
	}}
	if node, relay := writeEntry(chain, chain.Targets[0], func(n routing.NodeID) bool { return n == 1 }); node != 1 || relay {
		t.Fatalf("got node %d relay %v, want the head's node without relay", node, relay)
	}
}

func TestSuspectsExpire(t *testing.T) {
	var s suspects
	t0 := time.Unix(1000, 0)
	if s.suspect(1, t0) {
		t.Fatal("a node never marked is suspect")
	}
	s.mark(1, t0)
	if !s.suspect(1, t0.Add(relayHold-time.Nanosecond)) {
		t.Fatal("a marked node is not suspect within relayHold")
	}
	if s.suspect(1, t0.Add(relayHold)) {
		t.Fatal("a marked node is still suspect after relayHold")
	}
	s.mark(2, t0)
	s.clear(2)
	if s.suspect(2, t0) {
		t.Fatal("a cleared node is suspect")
	}
}

// A large payload on its way out delays the probe that travels behind it.
func TestProbeDelay(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{0, time.Second}, {1 << 20, time.Second + time.Second/8}, {8 << 20, 2 * time.Second}, {64 << 20, 9 * time.Second}} {
		if got := probeDelay(tc.n); got != tc.want {
			t.Errorf("probeDelay(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}
