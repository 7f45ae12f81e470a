package layout

import (
	"errors"
	"slices"
	"testing"

	"github.com/flyfs/flyfs/core/routing"
)

// seqTable is table id, version v, with chains base, base+1, ..., base+n-1.
func seqTable(id, v uint32, n int, base routing.ChainID) ChainTable {
	t := ChainTable{ID: id, Version: v}
	for i := range n {
		t.Chains = append(t.Chains, base+routing.ChainID(i))
	}
	return t
}

func TestTableValidate(t *testing.T) {
	if err := seqTable(1, 1, 4, 100).Validate(); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]ChainTable{
		"id 0":      {ID: 0, Version: 1, Chains: []routing.ChainID{1}},
		"version 0": {ID: 1, Version: 0, Chains: []routing.ChainID{1}},
		"empty":     {ID: 1, Version: 1},
		"duplicate": {ID: 1, Version: 1, Chains: []routing.ChainID{1, 2, 1}},
	} {
		if err := bad.Validate(); !errors.Is(err, ErrTable) {
			t.Errorf("%s: got %v, want ErrTable", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestTableSetIsAppendOnly(t *testing.T) {
	s := make(TableSet)
	v1 := seqTable(7, 1, 4, 1)
	if err := s.Add(v1); err != nil {
		t.Fatal(err)
	}
	// The set keeps its own copy: the caller's slice may be reused.
	v1.Chains[0] = 99
	if got, _ := s.Table(7, 1); got.Chains[0] != 1 {
		t.Fatalf("stored table changed with the caller's slice: %v", got.Chains)
	}
	if err := s.Add(seqTable(7, 1, 4, 1)); err != nil {
		t.Errorf("re-adding an identical version: %v", err)
	}
	if err := s.Add(seqTable(7, 1, 5, 1)); !errors.Is(err, ErrTable) {
		t.Errorf("rewriting v1: got %v", err)
	}
	if err := s.Add(seqTable(7, 3, 4, 1)); !errors.Is(err, ErrTable) {
		t.Errorf("skipping v2: got %v", err)
	}
	if err := s.Add(seqTable(7, 2, 6, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(seqTable(8, 2, 6, 1)); !errors.Is(err, ErrTable) {
		t.Errorf("new table starting at v2: got %v", err)
	}
	if l, ok := s.Latest(7); !ok || l.Version != 2 || len(l.Chains) != 6 {
		t.Errorf("Latest = %+v, %v", l, ok)
	}
	if old, ok := s.Table(7, 1); !ok || !slices.Equal(old.Chains, []routing.ChainID{1, 2, 3, 4}) {
		t.Errorf("v1 after v2 = %+v, %v", old, ok)
	}
	for _, k := range [][2]uint32{{7, 0}, {7, 3}, {8, 1}, {0, 0}} {
		if _, ok := s.Table(k[0], k[1]); ok {
			t.Errorf("found table %d v%d", k[0], k[1])
		}
	}
	if _, ok := s.Latest(8); ok {
		t.Error("Latest of an unknown table")
	}
}

func TestLayoutTableLookup(t *testing.T) {
	s, err := NewTableSet(seqTable(1, 1, 4, 1), seqTable(1, 2, 8, 1))
	if err != nil {
		t.Fatal(err)
	}
	l := NewLayout(seqTable(1, 1, 4, 1), MinChunkSize, 4, 0, 0)
	tab, err := l.Table(s)
	if err != nil || tab.Version != 1 || len(tab.Chains) != 4 {
		t.Fatalf("pinned v1, got %+v, %v", tab, err)
	}
	l.TableVersion = 5
	if _, err := l.Table(s); !errors.Is(err, ErrTable) {
		t.Errorf("unknown version: %v", err)
	}
	l.TableVersion = 0
	if _, err := l.Table(s); !errors.Is(err, ErrLayout) {
		t.Errorf("version 0: %v", err)
	}
}
