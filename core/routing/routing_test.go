package routing

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func chain3() *Chain {
	return &Chain{ID: 1, Version: 3, Targets: []Target{
		{ID: 10, Node: 1, Public: Serving}, {ID: 20, Node: 2, Public: Syncing}, {ID: 30, Node: 3, Public: Serving}, {ID: 40, Node: 4, Public: Offline}}}
}

func TestChainRoles(t *testing.T) {
	c := chain3()
	if h, _ := c.Head(); h.ID != 10 {
		t.Fatalf("head %d", h.ID)
	}
	if s, _ := c.Successor(10); s.ID != 20 {
		t.Fatalf("successor of the head is the syncing target, got %d", s.ID)
	}
	if _, ok := c.Successor(30); ok {
		t.Fatal("the last writable target is the tail: no successor past an offline one")
	}
	if p, _ := c.Predecessor(30); p.ID != 20 {
		t.Fatalf("predecessor %d", p.ID)
	}
	if r := c.Readable(); len(r) != 2 || r[0].ID != 10 || r[1].ID != 30 {
		t.Fatalf("readable %v: only serving targets read", r)
	}
	c.Targets[0].Public = Offline
	if h, _ := c.Head(); h.ID != 30 {
		t.Fatalf("with the head offline and the next syncing, the head is %d", h.ID)
	}
}

func TestFileSourceFollowsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routing.json")
	write := func(in *Info) {
		b, _ := json.Marshal(in)
		tmp := path + ".tmp"
		os.WriteFile(tmp, b, 0o644)
		os.Rename(tmp, path)
	}
	write(&Info{Version: 5, Nodes: map[NodeID]Node{1: {ID: 1, Addr: "a:1"}}, Chains: map[ChainID]*Chain{1: chain3()}})
	f, err := OpenFile(path, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Current().Version != 5 || f.Current().Chains[1].Version != 3 {
		t.Fatalf("loaded %+v", f.Current())
	}
	changed := f.Changed()
	time.Sleep(20 * time.Millisecond) // a newer mtime
	c := chain3()
	c.Version = 4
	write(&Info{Version: 6, Chains: map[ChainID]*Chain{1: c}})
	select {
	case <-changed:
	case <-time.After(2 * time.Second):
		t.Fatal("no change noticed")
	}
	if f.Current().Version != 6 || f.Current().Chains[1].Version != 4 {
		t.Fatalf("after the edit %+v", f.Current())
	}
	time.Sleep(20 * time.Millisecond)
	write(&Info{Version: 2}) // older: ignored
	f.Refresh(nil, 0)
	if f.Current().Version != 6 {
		t.Fatal("an older file moved routing backwards")
	}
	os.WriteFile(path, []byte("{not json"), 0o644)
	f.Refresh(nil, 0)
	if f.Current().Version != 6 {
		t.Fatal("a broken file changed routing")
	}
}
