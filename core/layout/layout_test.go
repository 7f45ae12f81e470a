package layout

import (
	"errors"
	"slices"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/flyfs/flyfs/core/routing"
)

func TestNewLayoutPicksARange(t *testing.T) {
	tab := seqTable(3, 2, 10, 1000)
	l := NewLayout(tab, 1<<20, 4, 23, 0xabc)
	want := Layout{TableID: 3, TableVersion: 2, ChunkSize: 1 << 20, Stripe: 4, First: 3, Seed: 0xabc, Algo: DefaultAlgo}
	if l != want {
		t.Fatalf("got %+v\nwant %+v", l, want)
	}
	if err := l.Check(tab); err != nil {
		t.Fatal(err)
	}
	// The range wraps around the end of the table: first 8 of 10, stripe 4
	// covers indexes 8, 9, 0, 1.
	l = NewLayout(tab, 1<<20, 4, 8, 5)
	chains, err := l.Chains(tab)
	if err != nil {
		t.Fatal(err)
	}
	s := slices.Clone(chains)
	slices.Sort(s)
	if !slices.Equal(s, []routing.ChainID{1000, 1001, 1008, 1009}) {
		t.Fatalf("wrapped stripe = %v", chains)
	}
	// An empty table does not panic; Check rejects the result.
	if l := NewLayout(ChainTable{ID: 1, Version: 1}, 1<<20, 1, 5, 0); l.Check(ChainTable{ID: 1, Version: 1}) == nil {
		t.Error("layout on an empty table passed Check")
	}
}

func TestChainsGolden(t *testing.T) {
	// Pins the whole mapping (range, wrap, shuffle) end to end: table of 16
	// chains 100..115, first 14, stripe 8, seed 0 → perm [1 2 6 5 4 0 3 7]
	// → table indexes (14+perm)%16.
	tab := seqTable(1, 1, 16, 100)
	l := NewLayout(tab, MinChunkSize, 8, 14, 0)
	got, err := l.Chains(tab)
	if err != nil {
		t.Fatal(err)
	}
	want := []routing.ChainID{115, 100, 104, 103, 102, 114, 101, 105}
	if !slices.Equal(got, want) {
		t.Fatalf("Chains = %v, want %v", got, want)
	}
}

func TestEveryChunkLandsOnItsStripe(t *testing.T) {
	tab := seqTable(1, 1, 13, 500)
	for seed := range uint64(20) {
		for _, stripe := range []uint32{1, 2, 5, 13} {
			l := NewLayout(tab, 1<<16, stripe, seed*7, seed)
			chains, err := l.Chains(tab)
			if err != nil {
				t.Fatal(err)
			}
			// The stripe is stripe distinct chains of the table: one round of
			// stripe chunks uses each exactly once.
			if len(chains) != int(stripe) {
				t.Fatalf("%v: %d chains", l, len(chains))
			}
			seen := map[routing.ChainID]bool{}
			for _, c := range chains {
				if seen[c] || !slices.Contains(tab.Chains, c) {
					t.Fatalf("%v: stripe %v repeats a chain or leaves the table", l, chains)
				}
				seen[c] = true
			}
			// They are the stripe consecutive table indexes from First.
			for k := range stripe {
				if c := tab.Chains[(l.First+k)%13]; !seen[c] {
					t.Fatalf("%v: stripe %v misses table index %d", l, chains, (l.First+k)%13)
				}
			}
			for i := range uint64(3 * stripe) {
				c, err := l.Chain(tab, i)
				if err != nil {
					t.Fatal(err)
				}
				if c != chains[i%uint64(stripe)] {
					t.Fatalf("%v: chunk %d on %d, stripe says %d", l, i, c, chains[i%uint64(stripe)])
				}
				if c2, _ := l.Chain(tab, i+uint64(stripe)); c2 != c {
					t.Fatalf("%v: chunks %d and %d on %d and %d", l, i, i+uint64(stripe), c, c2)
				}
			}
			// Far chunk indexes wrap the same way.
			big := uint64(1<<63) + 12345
			if c, _ := l.Chain(tab, big); c != chains[big%uint64(stripe)] {
				t.Fatalf("%v: chunk %d on %d", l, big, c)
			}
		}
	}
}

func TestRoundRobinSpreadsFilesEvenly(t *testing.T) {
	tab := seqTable(1, 1, 16, 1)
	const stripe = 4
	uses := map[routing.ChainID]int{}
	var counter uint64 = 1 << 40 // any start: the cursor is seeded randomly
	for f := range uint64(1000) {
		l := NewLayout(tab, MinChunkSize, stripe, counter, f*0x9e3779b9)
		counter += stripe
		chains, err := l.Chains(tab)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chains {
			uses[c]++
		}
	}
	if len(uses) != 16 {
		t.Fatalf("%d chains used, want 16", len(uses))
	}
	for c, n := range uses {
		if n != 250 {
			t.Errorf("chain %d used %d times, want 250", c, n)
		}
	}
	// Shuffling spreads the first chunk of files too: with the seed, position 0
	// is not always the range's first chain.
	firsts := map[routing.ChainID]int{}
	for f := range uint64(1000) {
		l := NewLayout(tab, MinChunkSize, stripe, 0, f)
		c, _ := l.Chain(tab, 0)
		firsts[c]++
	}
	if len(firsts) != stripe {
		t.Errorf("chunk 0 of files sharing a range used %d chains, want %d", len(firsts), stripe)
	}
}

func TestChunkMath(t *testing.T) {
	l := Layout{TableID: 1, TableVersion: 1, ChunkSize: 1 << 20, Stripe: 1, Algo: DefaultAlgo}
	for _, c := range []struct {
		off   uint64
		idx   uint64
		inOff uint32
	}{
		{0, 0, 0}, {1<<20 - 1, 0, 1<<20 - 1}, {1 << 20, 1, 0}, {5<<20 + 7, 5, 7},
		{1<<32 + 3, 1 << 12, 3}, {1<<64 - 1, 1<<44 - 1, 1<<20 - 1},
	} {
		if got := l.ChunkIndex(c.off); got != c.idx {
			t.Errorf("ChunkIndex(%d) = %d, want %d", c.off, got, c.idx)
		}
		if got := l.ChunkOffset(c.off); got != c.inOff {
			t.Errorf("ChunkOffset(%d) = %d, want %d", c.off, got, c.inOff)
		}
		if got := l.ChunkID(42, c.off); got != MakeChunkID(42, c.idx) || got.Inode() != 42 || got.Index() != c.idx {
			t.Errorf("ChunkID(42, %d) = %v", c.off, got)
		}
	}
	var zero Layout // no panic on a zero chunk size
	if zero.ChunkIndex(123) != 0 || zero.ChunkOffset(123) != 0 {
		t.Error("zero layout")
	}
}

func TestValidateRejectsBadLayouts(t *testing.T) {
	good := Layout{TableID: 1, TableVersion: 1, ChunkSize: 1 << 20, Stripe: 4, First: 2, Seed: 9, Algo: DefaultAlgo}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, cs := range []uint32{MinChunkSize, MaxChunkSize} {
		g := good
		g.ChunkSize = cs
		if err := g.Validate(); err != nil {
			t.Errorf("chunk size %d: %v", cs, err)
		}
	}
	for name, mod := range map[string]func(*Layout){
		"table id 0":          func(l *Layout) { l.TableID = 0 },
		"table version 0":     func(l *Layout) { l.TableVersion = 0 },
		"chunk size 0":        func(l *Layout) { l.ChunkSize = 0 },
		"chunk size 32 KiB":   func(l *Layout) { l.ChunkSize = 32 << 10 },
		"chunk size 128 MiB":  func(l *Layout) { l.ChunkSize = 128 << 20 },
		"chunk size not pow2": func(l *Layout) { l.ChunkSize = 3 << 20 },
		"stripe 0":            func(l *Layout) { l.Stripe = 0 },
		"stripe too wide":     func(l *Layout) { l.Stripe = MaxStripe + 1 },
		"algo 0":              func(l *Layout) { l.Algo = 0 },
		"algo 9":              func(l *Layout) { l.Algo = 9 },
	} {
		l := good
		mod(&l)
		err := l.Validate()
		if !errors.Is(err, ErrLayout) {
			t.Errorf("%s: got %v, want ErrLayout", name, err)
			continue
		}
		t.Logf("%s: %v", name, err)
		if _, err := l.Split(0, 10); err == nil {
			t.Errorf("%s: Split accepted it", name)
		}
	}

	tab := seqTable(1, 1, 4, 1)
	for name, c := range map[string]struct {
		mod func(*Layout)
		tab ChainTable
	}{
		"other table":         {func(*Layout) {}, seqTable(2, 1, 4, 1)},
		"other version":       {func(*Layout) {}, seqTable(1, 2, 4, 1)},
		"stripe beyond table": {func(l *Layout) { l.Stripe = 5 }, tab},
		"first beyond table":  {func(l *Layout) { l.First = 4 }, tab},
		"empty table":         {func(*Layout) {}, ChainTable{ID: 1, Version: 1}},
	} {
		l := good
		c.mod(&l)
		err := l.Check(c.tab)
		if !errors.Is(err, ErrLayout) {
			t.Errorf("%s: got %v, want ErrLayout", name, err)
			continue
		}
		t.Logf("%s: %v", name, err)
		if _, err := l.Chain(c.tab, 0); err == nil {
			t.Errorf("%s: Chain accepted it", name)
		}
		if _, err := LastChunkChains(l, c.tab, 16); err == nil {
			t.Errorf("%s: LastChunkChains accepted it", name)
		}
	}
}

func TestLayoutCBOR(t *testing.T) {
	l := Layout{TableID: 1, TableVersion: 2, ChunkSize: 1 << 20, Stripe: 3, First: 4, Seed: 1<<64 - 1, Algo: 1}
	b, err := cbor.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	// Integer keys 1..7, not field names: the stored form is compact and
	// survives renaming a field.
	var m map[uint64]any
	if err := cbor.Unmarshal(b, &m); err != nil || len(m) != 7 {
		t.Fatalf("encoded as %v (%v)", m, err)
	}
	var back Layout
	if err := cbor.Unmarshal(b, &back); err != nil || back != l {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	tab := seqTable(5, 6, 3, 9)
	b, _ = cbor.Marshal(tab)
	var tb ChainTable
	if err := cbor.Unmarshal(b, &tb); err != nil || !tb.equal(tab) {
		t.Fatalf("table round trip: %+v, %v", tb, err)
	}
}
