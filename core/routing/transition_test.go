package routing

import (
	"fmt"
	"testing"
)

// row builds a two-target chain [pred, me] (or [me] alone) and returns me's
// next public state, covering one row of the design's table.
func rowNext(t *testing.T, local LocalState, public PublicState, pred *PublicState, predLocal LocalState) PublicState {
	t.Helper()
	c := &Chain{ID: 1, Version: 7}
	locals := map[TargetID]LocalState{2: local}
	if pred != nil {
		c.Targets = append(c.Targets, Target{ID: 1, Public: *pred})
		locals[1] = predLocal
	}
	c.Targets = append(c.Targets, Target{ID: 2, Public: public})
	out, _ := UpdateChain(c, func(id TargetID) LocalState { return locals[id] })
	for _, tg := range out.Targets {
		if tg.ID == 2 {
			return tg.Public
		}
	}
	t.Fatal("target vanished")
	return 0
}

func ps(s PublicState) *PublicState { return &s }

// TestTableRows: one case per row of the state table in ARCHITECTURE.md.
func TestTableRows(t *testing.T) {
	serving := ps(Serving)
	waiting := ps(Waiting)
	cases := []struct {
		local     LocalState
		public    PublicState
		pred      *PublicState // nil: no predecessor
		predLocal LocalState
		want      PublicState
	}{
		{UpToDate, Serving, serving, UpToDate, Serving},
		{UpToDate, Syncing, serving, UpToDate, Serving},
		{UpToDate, Waiting, serving, UpToDate, Waiting},
		{UpToDate, LastSrv, nil, 0, Serving},
		{UpToDate, Offline, serving, UpToDate, Waiting},
		{Online, Serving, serving, UpToDate, Serving},
		{Online, Syncing, serving, UpToDate, Syncing},
		{Online, Syncing, waiting, Online, Waiting},
		{Online, Waiting, serving, UpToDate, Syncing},
		{Online, Waiting, waiting, Online, Waiting},
		{Online, LastSrv, nil, 0, Serving},
		{Online, Offline, nil, 0, Waiting},
		{LocalOffline, Serving, nil, 0, LastSrv},
		{LocalOffline, Serving, serving, UpToDate, Offline},
		{LocalOffline, Syncing, serving, UpToDate, Offline},
		{LocalOffline, Waiting, serving, UpToDate, Offline},
		{LocalOffline, LastSrv, nil, 0, LastSrv},
		{LocalOffline, Offline, serving, UpToDate, Offline},
	}
	for i, c := range cases {
		pred := "none"
		if c.pred != nil {
			pred = c.pred.String()
		}
		t.Run(fmt.Sprintf("row%02d_%v_%v_pred_%s", i+1, c.local, c.public, pred), func(t *testing.T) {
			if got := rowNext(t, c.local, c.public, c.pred, c.predLocal); got != c.want {
				t.Fatalf("next = %v, want %v", got, c.want)
			}
		})
	}
}

func states(c *Chain) string {
	s := ""
	for _, t := range c.Targets {
		s += fmt.Sprintf("%d:%v ", t.ID, t.Public)
	}
	return s
}

func TestChainRules(t *testing.T) {
	three := func(a, b, c PublicState) *Chain {
		return &Chain{ID: 1, Version: 1, Targets: []Target{{ID: 1, Public: a}, {ID: 2, Public: b}, {ID: 3, Public: c}}}
	}
	cases := []struct {
		name    string
		chain   *Chain
		local   map[TargetID]LocalState
		want    string
		changed bool
	}{
		{"steady chain keeps its version", three(Serving, Serving, Serving),
			map[TargetID]LocalState{1: UpToDate, 2: UpToDate, 3: UpToDate}, "1:serving 2:serving 3:serving ", false},
		{"failed head moves to the tail", three(Serving, Serving, Serving),
			map[TargetID]LocalState{1: LocalOffline, 2: UpToDate, 3: UpToDate}, "2:serving 3:serving 1:offline ", true},
		{"at most one syncing target", three(Serving, Offline, Offline),
			map[TargetID]LocalState{1: UpToDate, 2: Online, 3: Online}, "1:serving 2:syncing 3:waiting ", true},
		{"last serving replica fails: lastsrv freezes the chain", three(Serving, Offline, Offline),
			map[TargetID]LocalState{1: LocalOffline, 2: Online, 3: UpToDate}, "1:lastsrv 2:waiting 3:waiting ", true},
		{"only that lastsrv replica unfreezes it", three(LastSrv, Waiting, Waiting),
			map[TargetID]LocalState{1: UpToDate, 2: Online, 3: UpToDate}, "1:serving 2:syncing 3:waiting ", true},
		{"stale replicas never promote themselves", three(LastSrv, Waiting, Waiting),
			map[TargetID]LocalState{1: LocalOffline, 2: UpToDate, 3: UpToDate}, "1:lastsrv 2:waiting 3:waiting ", false},
		{"a synced target serves and joins the serving group", three(Serving, Offline, Syncing),
			map[TargetID]LocalState{1: UpToDate, 2: LocalOffline, 3: UpToDate}, "1:serving 3:serving 2:offline ", true},
		{"all fail at once: the first becomes lastsrv", three(Serving, Serving, Serving),
			map[TargetID]LocalState{}, "1:lastsrv 2:offline 3:offline ", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, changed := UpdateChain(c.chain, func(id TargetID) LocalState {
				if l, ok := c.local[id]; ok {
					return l
				}
				return LocalOffline
			})
			if got := states(out); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
			if changed != c.changed || (changed && out.Version != c.chain.Version+1) || (!changed && out.Version != c.chain.Version) {
				t.Fatalf("changed %v version %d (was %d)", changed, out.Version, c.chain.Version)
			}
		})
	}
}
