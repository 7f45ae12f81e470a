package routing

import (
	"errors"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// uniformDisks returns nodes×per disks, node ids from 1.
func uniformDisks(nodes, per int) []Disk {
	var out []Disk
	for n := range nodes {
		for p := range per {
			out = append(out, Disk{Node: NodeID(n + 1), Index: p})
		}
	}
	return out
}

// perNodeDisks returns disks on nodes 1.. with the given numbers of disks.
func perNodeDisks(counts ...int) []Disk {
	var out []Disk
	for n, c := range counts {
		for p := range c {
			out = append(out, Disk{Node: NodeID(n + 1), Index: p})
		}
	}
	return out
}

// valid checks a table by hand (not through Check): chains of r disks in
// range, on r distinct nodes.
func valid(t *testing.T, disks []Disk, r, chains int, table [][]int) {
	t.Helper()
	if len(table) != chains {
		t.Fatalf("%d chains, want %d", len(table), chains)
	}
	for c, ch := range table {
		if len(ch) != r {
			t.Fatalf("chain %d = %v: %d replicas, want %d", c, ch, len(ch), r)
		}
		nodes := map[NodeID]bool{}
		for _, d := range ch {
			if d < 0 || d >= len(disks) {
				t.Fatalf("chain %d = %v: disk %d out of range", c, ch, d)
			}
			if nodes[disks[d].Node] {
				t.Fatalf("chain %d = %v: two replicas on node %d", c, ch, disks[d].Node)
			}
			nodes[disks[d].Node] = true
		}
	}
}

func TestLayoutsRespectConstraints(t *testing.T) {
	cases := []struct {
		name     string
		disks    []Disk
		r, chain int
		simple   bool // SimpleLayout exists for it
	}{
		{"7x1 r3", uniformDisks(7, 1), 3, 7, true},
		{"6x1 r2", uniformDisks(6, 1), 2, 15, true},
		{"10x1 r3", uniformDisks(10, 1), 3, 30, true},
		{"4x4 r3", uniformDisks(4, 4), 3, 48, true},
		{"8x2 r3", uniformDisks(8, 2), 3, 50, true},
		{"3x1 r3", uniformDisks(3, 1), 3, 5, true},
		{"5x1 r1", uniformDisks(5, 1), 1, 12, true},
		{"uneven 3,3,2,2,1 r3", perNodeDisks(3, 3, 2, 2, 1), 3, 40, false},
		{"uneven 4,1,1 r2", perNodeDisks(4, 1, 1), 2, 5, false},
		{"more chains than pairs", uniformDisks(5, 1), 2, 23, true},
		{"fewer chains than disks", uniformDisks(10, 3), 3, 4, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bal, err := BalancedLayout(tc.disks, tc.r, tc.chain, 7)
			if err != nil {
				t.Fatal(err)
			}
			valid(t, tc.disks, tc.r, tc.chain, bal)
			if err := Check(tc.disks, tc.r, bal); err != nil {
				t.Fatalf("Check rejects a valid table: %v", err)
			}
			sim, err := SimpleLayout(tc.disks, tc.r, tc.chain)
			if tc.simple != (err == nil) {
				t.Fatalf("SimpleLayout error %v, want success %v", err, tc.simple)
			}
			if err == nil {
				valid(t, tc.disks, tc.r, tc.chain, sim)
			}
		})
	}
}

// TestBalancedSpreadsChainsAndHeads: per-disk chain and head counts within
// one of each other (the node cap does not bind in these cases).
func TestBalancedSpreadsChainsAndHeads(t *testing.T) {
	cases := []struct {
		name     string
		disks    []Disk
		r, chain int
	}{
		{"fano", uniformDisks(7, 1), 3, 7},
		{"9x1 r3 x2 copies", uniformDisks(9, 1), 3, 24},
		{"10x1 r3 31 chains", uniformDisks(10, 1), 3, 31},
		{"4x4 r3 50 chains", uniformDisks(4, 4), 3, 50},
		{"uneven nodes", perNodeDisks(3, 3, 2, 2, 1), 3, 40},
		{"12x1 r2 100 chains", uniformDisks(12, 1), 2, 100},
		{"13x1 r4", uniformDisks(13, 1), 4, 13},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, err := BalancedLayout(tc.disks, tc.r, tc.chain, 3)
			if err != nil {
				t.Fatal(err)
			}
			b := Explain(tc.disks, table)
			if b.ChainsMax-b.ChainsMin > 1 || b.HeadsMax-b.HeadsMin > 1 {
				t.Fatalf("unbalanced counts: %v", b)
			}
			total := 0
			for _, ch := range table {
				total += len(ch)
			}
			if total != tc.r*tc.chain || b.Invalid != 0 {
				t.Fatalf("slots %d, invalid %d", total, b.Invalid)
			}
		})
	}
}

func TestBalancedIsDeterministic(t *testing.T) {
	for _, tc := range []struct {
		name     string
		disks    []Disk
		r, chain int
	}{
		{"search", uniformDisks(10, 1), 3, 30},
		{"design copies", uniformDisks(7, 1), 3, 21},
		{"design plus search", uniformDisks(4, 4), 3, 80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := BalancedLayout(tc.disks, tc.r, tc.chain, 42)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := BalancedLayout(tc.disks, tc.r, tc.chain, 42)
			if !reflect.DeepEqual(a, b) {
				t.Fatal("same seed, different tables")
			}
			c, _ := BalancedLayout(tc.disks, tc.r, tc.chain, 43)
			if reflect.DeepEqual(a, c) {
				t.Fatal("the seed is ignored")
			}
		})
	}
}

// TestBalancedReachesKnownDesigns: where a design exists for the parameters,
// every two disks on different nodes share exactly lambda chains, so a failed
// disk's reads spread evenly over every disk on another node.
func TestBalancedReachesKnownDesigns(t *testing.T) {
	cases := []struct {
		name     string
		disks    []Disk
		r, chain int
		lambda   int
	}{
		{"fano plane 7,3", uniformDisks(7, 1), 3, 7, 1},
		{"affine plane 9,3", uniformDisks(9, 1), 3, 12, 1},
		{"round robin 6,2", uniformDisks(6, 1), 2, 15, 1},
		{"STS(13) twice", uniformDisks(13, 1), 3, 52, 2},
		{"STS(15) Bose", uniformDisks(15, 1), 3, 35, 1},
		{"STS(19) Skolem", uniformDisks(19, 1), 3, 57, 1},
		{"pairs of 5 nodes x 3 disks", uniformDisks(5, 3), 2, 90, 1},
		{"4 nodes x 4 disks, lifted", uniformDisks(4, 4), 3, 64, 2},
		{"7 nodes x 3 disks, Fano lifted", uniformDisks(7, 3), 3, 63, 1},
		{"5 nodes x 5 disks r4, lifted", uniformDisks(5, 5), 4, 125, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, err := BalancedLayout(tc.disks, tc.r, tc.chain, 1)
			if err != nil {
				t.Fatal(err)
			}
			valid(t, tc.disks, tc.r, tc.chain, table)
			b := Explain(tc.disks, table)
			if b.PairMin != tc.lambda || b.PairMax != tc.lambda {
				t.Fatalf("pairs share %d..%d chains, want exactly %d: %v", b.PairMin, b.PairMax, tc.lambda, b)
			}
			perNode := len(tc.disks) / b.Nodes
			want := 1 / float64(len(tc.disks)-perNode) // every disk on another node
			if math.Abs(b.Worst-want) > 1e-12 || math.Abs(b.Bound-want) > 1e-12 {
				t.Fatalf("worst %v, bound %v, want %v", b.Worst, b.Bound, want)
			}
			if perNode == 1 && math.Abs(b.Worst-b.Ideal) > 1e-12 {
				t.Fatalf("worst %v, ideal %v", b.Worst, b.Ideal)
			}
		})
	}
}

// TestBalancedAwkwardSizes: no construction applies, so the search does the
// work; it must beat the ring clearly and come close to the ideal.
func TestBalancedAwkwardSizes(t *testing.T) {
	cases := []struct {
		name      string
		disks     []Disk
		r, chain  int
		overIdeal float64 // allowed Worst / Ideal
		overBound float64 // allowed Worst / Bound
	}{
		// BIBD(10,3,2) exists; the search finds one.
		{"10 disks r3 30 chains", uniformDisks(10, 1), 3, 30, 1.5, 1.0},
		// Disks can't share chains with same-node disks: Bound = 1.25 × Ideal.
		{"16 disks on 4 nodes, 32 chains", uniformDisks(4, 4), 3, 32, 1.5, 1.0},
		// 48 chains: some pairs must share 2 chains, others 1: Bound = 1.67 × Ideal.
		{"16 disks on 4 nodes, 48 chains", uniformDisks(4, 4), 3, 48, 1.7, 1.0},
		{"18 disks r3 102 chains", uniformDisks(18, 1), 3, 102, 1.5, 1.0},
		{"8 nodes x 2 disks", uniformDisks(8, 2), 3, 48, 1.7, 1.0},
		{"uneven nodes", perNodeDisks(3, 3, 2, 2, 1), 3, 40, 2.0, 1.25},
		{"12 disks r2 50 chains", uniformDisks(12, 1), 2, 50, 1.5, 1.0},
		{"13 disks r4 (projective plane)", uniformDisks(13, 1), 4, 13, 1.0, 1.0},
		{"40 nodes x 2 disks r3 400 chains", uniformDisks(40, 2), 3, 400, 6.0, 1.0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, err := BalancedLayout(tc.disks, tc.r, tc.chain, 1)
			if err != nil {
				t.Fatal(err)
			}
			valid(t, tc.disks, tc.r, tc.chain, table)
			b := Explain(tc.disks, table)
			t.Log(b)
			if b.Worst > tc.overIdeal*b.Ideal+1e-12 {
				t.Errorf("worst %.4f > %.2f × ideal %.4f", b.Worst, tc.overIdeal, b.Ideal)
			}
			if b.Worst > tc.overBound*b.Bound+1e-12 {
				t.Errorf("worst %.4f > %.2f × bound %.4f", b.Worst, tc.overBound, b.Bound)
			}
			if b.Simple > 0 && b.Worst > b.Simple/2 { // no ring exists for uneven nodes
				t.Errorf("worst %.4f not clearly below the simple layout's %.4f", b.Worst, b.Simple)
			}
		})
	}
}

func TestConstructions(t *testing.T) {
	pairsOnce := func(t *testing.T, v int, blocks [][]int) {
		t.Helper()
		if len(blocks) != v*(v-1)/6 {
			t.Fatalf("v=%d: %d blocks", v, len(blocks))
		}
		seen := map[[2]int]int{}
		for _, b := range blocks {
			for i := range b {
				for j := range b {
					if b[i] < b[j] {
						if b[j] >= v {
							t.Fatalf("v=%d: point %d", v, b[j])
						}
						seen[[2]int{b[i], b[j]}]++
					}
				}
			}
		}
		for p, c := range seen {
			if c != 1 {
				t.Fatalf("v=%d: pair %v in %d blocks", v, p, c)
			}
		}
		if len(seen) != v*(v-1)/2 {
			t.Fatalf("v=%d: %d pairs covered", v, len(seen))
		}
	}
	for v := 7; v <= 55; v += 6 {
		pairsOnce(t, v, skolemSTS(v))
		pairsOnce(t, v+2, boseSTS(v+2))
	}
	for _, c := range []struct{ r, per int }{{2, 4}, {3, 1}, {3, 4}, {3, 6}, {4, 3}, {4, 5}, {5, 7}, {6, 5}} {
		oa := orthogonalArray(c.r, c.per)
		if len(oa) != c.per*c.per {
			t.Fatalf("OA(%d,%d): %d rows", c.r, c.per, len(oa))
		}
		for i := range c.r {
			for j := i + 1; j < c.r; j++ {
				seen := map[[2]int]bool{}
				for _, row := range oa {
					seen[[2]int{row[i], row[j]}] = true
				}
				if len(seen) != c.per*c.per {
					t.Fatalf("OA(%d,%d): columns %d,%d hold %d pairs", c.r, c.per, i, j, len(seen))
				}
			}
		}
	}
	if orthogonalArray(4, 4) != nil || orthogonalArray(5, 3) != nil {
		t.Fatal("no construction for these: must report none")
	}
}

func TestAssignHeads(t *testing.T) {
	// Greedy picks 0 for {0,1}, 1 for {1,2} and must pick 0 for {0}: heads
	// 2,1,0. Only the path 0 -> 1 -> 2 (chain {0,1} to 1, {1,2} to 2) fixes it.
	table := [][]int{{0, 1}, {1, 2}, {0}}
	assignHeads(3, table)
	if want := [][]int{{1, 0}, {2, 1}, {0}}; !reflect.DeepEqual(table, want) {
		t.Fatalf("heads first: %v, want %v", table, want)
	}

	// Small random tables against brute force: the fewest heads on the
	// busiest disk and the most on the idlest must both be reached.
	rng := &splitmix{s: 9}
	for trial := range 200 {
		n, b := 2+rng.intn(4), 1+rng.intn(8)
		table := make([][]int, b)
		for c := range table {
			p := rng.perm(n)
			table[c] = p[:1+rng.intn(min(n, 3))]
		}
		before := map[int][]int{}
		for c, ch := range table {
			before[c] = append([]int(nil), ch...)
		}
		bestMax, bestMin := b+1, -1
		pick := make([]int, b)
		var rec func(c int)
		rec = func(c int) {
			if c == b {
				h := make([]int, n)
				for i, s := range pick {
					h[table[i][s]]++
				}
				lo, hi := minMax(h)
				bestMax, bestMin = min(bestMax, hi), max(bestMin, lo)
				return
			}
			for s := range table[c] {
				pick[c] = s
				rec(c + 1)
			}
		}
		rec(0)
		assignHeads(n, table)
		h := make([]int, n)
		for c, ch := range table {
			h[ch[0]]++
			got, want := append([]int(nil), ch...), before[c]
			sort.Ints(got)
			sort.Ints(want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d: chain %d changed members: %v -> %v", trial, c, before[c], ch)
			}
		}
		if lo, hi := minMax(h); hi != bestMax || lo != bestMin {
			t.Fatalf("trial %d: heads %v (%d..%d), best %d..%d, table %v", trial, h, lo, hi, bestMin, bestMax, table)
		}
	}
}

func TestPlacementErrors(t *testing.T) {
	two := uniformDisks(2, 3)
	cases := []struct {
		name     string
		disks    []Disk
		r, chain int
	}{
		{"no disks", nil, 3, 10},
		{"r zero", uniformDisks(5, 1), 0, 10},
		{"r negative", uniformDisks(5, 1), -1, 10},
		{"no chains", uniformDisks(5, 1), 3, 0},
		{"fewer nodes than replicas", two, 3, 10},
		{"duplicate disk", append(uniformDisks(4, 1), Disk{Node: 2, Index: 0}), 3, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tb, err := BalancedLayout(tc.disks, tc.r, tc.chain, 1); !errors.Is(err, ErrPlacement) || tb != nil {
				t.Fatalf("balanced: %v, %v", tb, err)
			}
			if tb, err := SimpleLayout(tc.disks, tc.r, tc.chain); !errors.Is(err, ErrPlacement) || tb != nil {
				t.Fatalf("simple: %v, %v", tb, err)
			}
		})
	}
	// The ring cannot avoid a node with most of the disks; the search can.
	uneven := perNodeDisks(4, 1, 1)
	if _, err := SimpleLayout(uneven, 2, 5); !errors.Is(err, ErrPlacement) {
		t.Fatalf("simple layout on uneven nodes: %v", err)
	}
	d := uniformDisks(3, 1)
	for _, bad := range [][][]int{{{0, 1, 1}}, {{0, 1}}, {{0, 1, 3}}, {{0, 1, -1}}} {
		if err := Check(d, 3, bad); !errors.Is(err, ErrPlacement) {
			t.Fatalf("Check(%v) = %v", bad, err)
		}
	}
}

// TestNodeCap: a node with most disks cannot be in every chain twice; its
// disks get fewer chains and every chain still has distinct nodes.
func TestNodeCap(t *testing.T) {
	disks := perNodeDisks(6, 1, 1)
	table, err := BalancedLayout(disks, 2, 6, 1)
	if err != nil {
		t.Fatal(err)
	}
	valid(t, disks, 2, 6, table)
	b := Explain(disks, table)
	if b.ChainsMin != 1 || b.ChainsMax != 3 {
		t.Fatalf("node 1's six disks one chain each, the others three: %v", b)
	}
}

func TestExplainFigures(t *testing.T) {
	disks := uniformDisks(4, 1)
	table := [][]int{{0, 1}, {0, 1}, {2, 3}, {0, 2}, {0, 0}, {0, 9}, {1, 2, 3}}
	b := Explain(disks, table)
	// Disk 1 is in two chains, both with disk 0: all its reads go to 0.
	if b.Worst != 1 || b.WorstFailed != 1 || b.WorstSurvivor != 0 {
		t.Fatalf("worst %v (%d -> %d)", b.Worst, b.WorstFailed, b.WorstSurvivor)
	}
	if b.Invalid != 3 || b.Chains != 7 || b.Replicas != 2 {
		t.Fatalf("invalid %d chains %d replicas %d", b.Invalid, b.Chains, b.Replicas)
	}
	if b.ChainsMin != 1 || b.ChainsMax != 3 || b.HeadsMin != 0 || b.HeadsMax != 3 || b.PairMin != 0 || b.PairMax != 2 {
		t.Fatalf("counts %+v", b)
	}
	if math.Abs(b.Ideal-1.0/3) > 1e-12 || b.Bound != 1 {
		t.Fatalf("ideal %v bound %v", b.Ideal, b.Bound)
	}
	s := b.String()
	for _, want := range []string{"4 disks on 4 nodes", "2 replicas", "7 chains", "chains per disk 1..3", "heads per disk 0..3",
		"worst share of a failed disk's reads on one surviving disk: 1.0000", "ideal 0.3333", "simple layout 1.0000", "3 chains break the rules"} {
		if !strings.Contains(s, want) {
			t.Errorf("report %q lacks %q", s, want)
		}
	}

	// Disk 0 of a Fano-plane table: its 3 chains put 6 replica slots on the 6
	// other disks, one each, so each takes 1/6 of its reads.
	fano, _ := BalancedLayout(uniformDisks(7, 1), 3, 7, 1)
	if f := Explain(uniformDisks(7, 1), fano); math.Abs(f.Worst-1.0/6) > 1e-12 || math.Abs(f.Simple-1.0/3) > 1e-12 {
		t.Fatalf("fano: %v", f)
	}
}

func TestReplicationOne(t *testing.T) {
	disks := uniformDisks(4, 1)
	table, err := BalancedLayout(disks, 1, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := Explain(disks, table)
	if b.ChainsMin != 2 || b.ChainsMax != 3 || b.Worst != 0 || !strings.Contains(b.String(), "no surviving replica") {
		t.Fatalf("%v", b)
	}
}

func TestChainsFor(t *testing.T) {
	for _, c := range []struct{ n, r, per, want int }{{18, 3, 17, 102}, {10, 3, 9, 30}, {10, 3, 10, 34}, {0, 3, 1, 0}, {5, 0, 1, 0}} {
		if got := ChainsFor(c.n, c.r, c.per); got != c.want {
			t.Errorf("ChainsFor(%d,%d,%d) = %d, want %d", c.n, c.r, c.per, got, c.want)
		}
	}
}

func TestSimpleLayoutIsARing(t *testing.T) {
	// 3 nodes × 2 disks: the ring by (disk index, node) is 0,2,4,1,3,5; chains
	// take 3 consecutive positions, and each pass moves the head one on.
	disks := uniformDisks(3, 2)
	table, err := SimpleLayout(disks, 3, 6)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{0, 2, 4}, {1, 3, 5}, {2, 4, 0}, {3, 5, 1}, {4, 0, 2}, {5, 1, 3}}
	if !reflect.DeepEqual(table, want) {
		t.Fatalf("simple layout %v, want %v", table, want)
	}
	// Every failed disk hands half its reads to each of its two neighbours.
	if b := Explain(disks, table); b.Worst != 0.5 || b.HeadsMin != 1 || b.HeadsMax != 1 {
		t.Fatalf("%v", b)
	}
}
