package layout

import (
	"testing"

	"github.com/flyfs/flyfs/core/routing"
)

// The fuzzers take raw layout fields. Unless raw is set they first coerce
// them into a valid layout, so that most runs exercise the arithmetic and not
// only the validation; with raw set they must fail cleanly instead.

// FuzzSplit: Split either fails (and then only for a documented reason) or
// returns pieces satisfying every documented invariant; it never panics.
func FuzzSplit(f *testing.F) {
	f.Add(false, uint32(0), uint64(0), uint64(0))
	f.Add(false, uint32(4), uint64(1<<32-1), uint64(1<<21+3))
	f.Add(false, uint32(10), uint64(1<<64-11), uint64(10))
	f.Add(true, uint32(0), uint64(5), uint64(5))
	f.Add(true, uint32(3<<20), uint64(1), uint64(1))
	f.Fuzz(func(t *testing.T, raw bool, chunkSize uint32, off, n uint64) {
		if !raw {
			chunkSize = MinChunkSize << (chunkSize % 11)
		}
		l := Layout{TableID: 1, TableVersion: 1, ChunkSize: chunkSize, Stripe: 1, Algo: DefaultAlgo}
		// Keep lengths small enough to split: the fuzzer would otherwise
		// mostly hit the MaxPieces refusal.
		n %= 1 << 30
		ps, err := l.Split(off, n)
		if err != nil {
			if l.Validate() == nil && n <= ^off {
				t.Fatalf("Split(%d, %d) on %v failed: %v", off, n, l, err)
			}
			return
		}
		checkSplit(t, l, off, n, ps)
	})
}

// FuzzChain: Chain, Chains and LastChunkChains fail together and cleanly, or
// agree with each other and stay inside the layout's range of the table; they
// never panic.
func FuzzChain(f *testing.F) {
	f.Add(false, uint32(1), uint32(1), uint32(4), uint32(4), uint32(3), uint64(9), uint8(1), uint16(16), uint64(7), uint32(16))
	f.Add(false, uint32(1), uint32(1), uint32(0), uint32(15), uint32(15), uint64(0), uint8(1), uint16(15), uint64(1<<63), uint32(0))
	f.Add(false, uint32(1), uint32(1), uint32(0), uint32(199), uint32(900), uint64(1), uint8(1), uint16(1000), uint64(1<<64-1), uint32(32))
	f.Add(true, uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), uint64(0), uint8(0), uint16(0), uint64(0), uint32(0))
	f.Add(true, uint32(1), uint32(1), uint32(1<<16), uint32(5), uint32(0), uint64(1), uint8(1), uint16(4), uint64(0), uint32(2))
	f.Fuzz(func(t *testing.T, raw bool, tableID, version, chunkSize, stripe, first uint32, seed uint64, algo uint8, tableLen uint16, chunk uint64, hint uint32) {
		n := int(tableLen % 1024)
		if !raw {
			n = 1 + n%1023
			tableID, version, algo = 1, 1, DefaultAlgo
			chunkSize = MinChunkSize << (chunkSize % 11)
			stripe = 1 + stripe%uint32(n)
			first %= uint32(n)
		}
		tab := ChainTable{ID: 1, Version: 1}
		for i := range n {
			tab.Chains = append(tab.Chains, routing.ChainID(i*3+1))
		}
		l := Layout{TableID: tableID, TableVersion: version, ChunkSize: chunkSize, Stripe: stripe, First: first, Seed: seed, Algo: algo}
		c, err := l.Chain(tab, chunk)
		chains, err2 := l.Chains(tab)
		last, err3 := LastChunkChains(l, tab, hint)
		if (err == nil) != (err2 == nil) || (err == nil) != (err3 == nil) {
			t.Fatalf("%v: Chain err %v, Chains err %v, LastChunkChains err %v", l, err, err2, err3)
		}
		if err != nil {
			if !raw || l.Check(tab) == nil {
				t.Fatalf("%v: valid layout failed: %v", l, err)
			}
			return
		}
		if uint32(len(chains)) != stripe || c != chains[chunk%uint64(stripe)] {
			t.Fatalf("%v: chunk %d on %d, stripe %v", l, chunk, c, chains)
		}
		// The stripe is exactly table indexes First, ..., First+Stripe-1 (mod
		// the table length), each once.
		inRange := map[routing.ChainID]bool{}
		for k := range uint64(stripe) {
			inRange[tab.Chains[(uint64(first)+k)%uint64(n)]] = true
		}
		seen := map[routing.ChainID]bool{}
		for _, x := range chains {
			if seen[x] || !inRange[x] {
				t.Fatalf("%v: stripe %v repeats a chain or leaves its range", l, chains)
			}
			seen[x] = true
		}
		want := uint64(stripe)
		if hint != 0 {
			want = min(want, uint64(hint))
		}
		if uint64(len(last)) != want {
			t.Fatalf("%v: hint %d gave %d chains, want %d", l, hint, len(last), want)
		}
	})
}
