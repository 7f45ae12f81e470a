package layout

import (
	"slices"
	"testing"
)

func TestLastChunkChains(t *testing.T) {
	tab := seqTable(1, 1, 64, 1)
	l := NewLayout(tab, MinChunkSize, 40, 10, 77)
	all, _ := l.Chains(tab)
	for _, c := range []struct {
		hint uint32
		n    int
	}{{0, 40}, {1, 1}, {16, 16}, {32, 32}, {40, 40}, {64, 40}, {1<<32 - 1, 40}} {
		got, err := LastChunkChains(l, tab, c.hint)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, all[:c.n]) {
			t.Errorf("hint %d: %v, want the first %d of the stripe", c.hint, got, c.n)
		}
		// Every chunk below the hint maps to one of the returned chains.
		if c.hint > 0 {
			for i := range min(uint64(c.hint), 200) {
				ch, _ := l.Chain(tab, i)
				if !slices.Contains(got, ch) {
					t.Errorf("hint %d: chunk %d on chain %d, not in %v", c.hint, i, ch, got)
				}
			}
		}
	}
}

func TestGrowHint(t *testing.T) {
	for _, c := range []struct {
		hint   uint32
		chunks uint64
		stripe uint32
		want   uint32
	}{
		{InitialHint, 0, 200, 16},
		{InitialHint, 16, 200, 16},
		{InitialHint, 17, 200, 32},
		{InitialHint, 100, 200, 128},
		{InitialHint, 1 << 40, 200, 256}, // stops past the stripe
		{InitialHint, 1 << 40, 8, 16},    // already covers the stripe
		{0, 1000, 200, 0},                // unknown stays unknown
		{1 << 31, 1 << 40, 1<<32 - 1, 1 << 31},
	} {
		if got := GrowHint(c.hint, c.chunks, c.stripe); got != c.want {
			t.Errorf("GrowHint(%d, %d, %d) = %d, want %d", c.hint, c.chunks, c.stripe, got, c.want)
		}
	}
}
