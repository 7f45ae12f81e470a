package metad

import (
	"testing"

	"github.com/flyfs/flyfs/core/routing"
)

func TestRoomWindow(t *testing.T) {
	chains := []routing.ChainID{1, 2, 3, 4, 5, 6}
	for _, c := range []struct {
		name        string
		full        []routing.ChainID
		want        uint32
		counters    []uint64
		firsts      []uint32
		wantStripes uint32
	}{
		{"nothing full: as the counter says", nil, 3, []uint64{0, 4, 7}, []uint32{0, 4, 1}, 3},
		{"one full: windows around it", []routing.ChainID{3}, 2, []uint64{0, 1, 2, 3}, []uint32{0, 3, 4, 5}, 2},
		{"a window wraps around the table's end", []routing.ChainID{2, 3}, 3, []uint64{0, 1}, []uint32{3, 4}, 3},
		{"no window of the stripe: the longest run", []routing.ChainID{2, 4, 6}, 3, []uint64{0, 1, 2}, []uint32{0, 2, 4}, 1},
		{"two full: the run between", []routing.ChainID{1, 4}, 6, []uint64{0, 1}, []uint32{1, 4}, 2},
		{"every chain full: as the counter says", []routing.ChainID{1, 2, 3, 4, 5, 6}, 2, []uint64{5}, []uint32{5}, 2},
	} {
		full := fullChains{}
		for _, id := range c.full {
			full[id] = true
		}
		for i, counter := range c.counters {
			first, stripe := roomWindow(chains, full, c.want, counter)
			if first != c.firsts[i] || stripe != c.wantStripes {
				t.Errorf("%s: counter %d: start %d stripe %d, want %d and %d", c.name, counter, first, stripe, c.firsts[i], c.wantStripes)
			}
			if len(c.full) < len(chains) {
				for k := uint32(0); k < stripe; k++ {
					if full[chains[(first+k)%uint32(len(chains))]] {
						t.Errorf("%s: counter %d: the window holds full chain %d", c.name, counter, chains[(first+k)%uint32(len(chains))])
					}
				}
			}
		}
	}
}
