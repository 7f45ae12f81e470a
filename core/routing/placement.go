package routing

// Chain-table placement: which disks hold the replicas of which chain.
//
// Reads of a chain are spread evenly over its R replicas. When a disk fails,
// its share of each of its chains moves evenly to that chain's R-1 survivors,
// so the survivors that share many chains with the failed disk take most of its
// load. A good table makes every pair of disks (on different nodes) share the
// same number of chains — a balanced incomplete block design (BIBD), or a
// group divisible design when a node holds several disks — so the load of a
// failed disk spreads over all the others instead of landing on a few
// neighbours. The functions here are pure and deterministic.

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
)

// Disk is one storage device: the node that hosts it and its index on that
// node. Replicas of one chain must sit on different nodes.
type Disk struct {
	Node  NodeID
	Index int
}

func (d Disk) String() string { return fmt.Sprintf("node %d disk %d", d.Node, d.Index) }

// ErrPlacement is wrapped by every error of the placement functions.
var ErrPlacement = errors.New("routing: placement")

// ChainsFor returns the number of chains that gives each of n disks about
// perDisk chains of r replicas (rounded up).
func ChainsFor(n, r, perDisk int) int {
	if n <= 0 || r <= 0 || perDisk <= 0 {
		return 0
	}
	return (n*perDisk + r - 1) / r
}

// checkParams rejects inputs for which no table exists.
func checkParams(disks []Disk, r, chains int) error {
	switch {
	case len(disks) == 0:
		return fmt.Errorf("%w: no disks", ErrPlacement)
	case r < 1:
		return fmt.Errorf("%w: replication factor %d, want at least 1", ErrPlacement, r)
	case chains < 1:
		return fmt.Errorf("%w: %d chains, want at least 1", ErrPlacement, chains)
	}
	seen := make(map[Disk]bool, len(disks))
	nodes := make(map[NodeID]bool)
	for _, d := range disks {
		if seen[d] {
			return fmt.Errorf("%w: %v listed twice", ErrPlacement, d)
		}
		seen[d] = true
		nodes[d.Node] = true
	}
	if len(nodes) < r {
		return fmt.Errorf("%w: %d replicas need %d nodes, have %d", ErrPlacement, r, r, len(nodes))
	}
	return nil
}

// Check reports the first way in which table is not a valid chain table for
// disks with r replicas: a chain whose length is not r, a disk index out of
// range, or two replicas of one chain on the same node.
func Check(disks []Disk, r int, table [][]int) error {
	for c, ch := range table {
		if len(ch) != r {
			return fmt.Errorf("%w: chain %d has %d replicas, want %d", ErrPlacement, c, len(ch), r)
		}
		if err := checkChain(disks, ch); err != nil {
			return fmt.Errorf("%w: chain %d: %v", ErrPlacement, c, err)
		}
	}
	return nil
}

func checkChain(disks []Disk, ch []int) error {
	for i, d := range ch {
		if d < 0 || d >= len(disks) {
			return fmt.Errorf("disk %d out of range", d)
		}
		for _, e := range ch[:i] {
			if disks[e].Node == disks[d].Node {
				return fmt.Errorf("disks %d and %d both on node %d", e, d, disks[d].Node)
			}
		}
	}
	return nil
}

// SimpleLayout is the naive table, kept as a baseline: the disks are put on a
// ring ordered by (disk index, node) — so ring neighbours sit on different
// nodes when nodes have equal numbers of disks — and chain c takes the r
// consecutive ring positions starting at c*r, i.e. disks are dealt to chains
// round-robin. Each disk gets the same number of chains ±1; heads rotate by one
// replica on each pass over the ring. A failed disk's reads land on the few
// disks next to it on the ring. Returns indices into disks, head first, or an
// error when the ring puts two replicas of a chain on one node.
func SimpleLayout(disks []Disk, r, chains int) ([][]int, error) {
	if err := checkParams(disks, r, chains); err != nil {
		return nil, err
	}
	n := len(disks)
	ring := make([]int, n)
	for i := range ring {
		ring[i] = i
	}
	sort.SliceStable(ring, func(a, b int) bool {
		da, db := disks[ring[a]], disks[ring[b]]
		if da.Index != db.Index {
			return da.Index < db.Index
		}
		return da.Node < db.Node
	})
	table := make([][]int, chains)
	for c := range table {
		start := c * r
		rot := (start / n) % r
		ch := make([]int, r)
		for j := range ch {
			ch[j] = ring[(start+(j+rot)%r)%n]
		}
		table[c] = ch
	}
	if err := Check(disks, r, table); err != nil {
		return nil, fmt.Errorf("simple layout: %w", err)
	}
	return table, nil
}

// BalancedLayout returns a table of chains chains of r replicas over disks
// (indices into disks, head first) that spreads a failed disk's reads as evenly
// as it can over the other disks. It guarantees:
//   - every chain has r disks on r distinct nodes;
//   - chain counts per disk differ by at most one (unless a node holds so many
//     disks that it would need two replicas of some chain: then its disks get
//     fewer, as evenly as possible);
//   - head counts are balanced: no head can move to another replica of its
//     chain and bring two disks' head counts closer;
//   - the same inputs and seed give the same table.
//
// When every node has the same number of disks and a design on the nodes is
// known (all pairs for r=2, Steiner triple systems for r=3 and 1 or 3 nodes
// mod 6, all r-subsets of few nodes), it is lifted to disks with an orthogonal
// array and repeated (relabelled per copy) as often as chains allows: in those
// copies every two disks on different nodes share exactly the same number of
// chains. The remaining chains come from a seeded simulated annealing over
// swaps of disks between chains that minimises the sum of squared pair
// co-occurrence counts, with a bounded number of iterations (at most 4M
// swaps, well under a second for 3k disks; memory O(disks²)).
func BalancedLayout(disks []Disk, r, chains int, seed uint64) ([][]int, error) {
	if err := checkParams(disks, r, chains); err != nil {
		return nil, err
	}
	rng := &splitmix{s: seed}
	var table [][]int
	if d := pickDesign(disks, r, chains); d != nil {
		for range chains / len(d.blocks) {
			table = append(table, d.relabel(rng)...)
		}
	}
	if rem := chains - len(table); rem > 0 {
		t, err := searchLayout(disks, r, rem, rng)
		if err != nil {
			return nil, err
		}
		table = append(table, t...)
	}
	assignHeads(len(disks), table)
	if err := Check(disks, r, table); err != nil {
		return nil, fmt.Errorf("balanced layout (bug): %w", err)
	}
	return table, nil
}

// --- exact constructions ---

// liftedDesign is a design on nodes lifted to disks: blocks are chains of disk
// indices in which every two disks on different nodes meet equally often.
type liftedDesign struct {
	blocks [][]int
	grid   [][]int // grid[node rank][position] = disk index
}

// relabel returns a copy of the design under a random permutation of nodes
// and of the disks within each node; such a permutation keeps every pair
// count, and it makes repeated copies differ (better when two disks fail).
func (d *liftedDesign) relabel(rng *splitmix) [][]int {
	m, per := len(d.grid), len(d.grid[0])
	where := make(map[int][2]int, m*per)
	for n, row := range d.grid {
		for p, disk := range row {
			where[disk] = [2]int{n, p}
		}
	}
	nodePerm := rng.perm(m)
	diskPerm := make([][]int, m)
	for n := range diskPerm {
		diskPerm[n] = rng.perm(per)
	}
	out := make([][]int, len(d.blocks))
	for i, b := range d.blocks {
		ch := make([]int, len(b))
		for j, disk := range b {
			w := where[disk]
			n := nodePerm[w[0]]
			ch[j] = d.grid[n][diskPerm[n][w[1]]]
		}
		out[i] = ch
	}
	return out
}

// pickDesign returns the known design that covers the most of chains with
// whole copies, or nil when none applies (nodes with unequal numbers of disks,
// or every design bigger than chains).
func pickDesign(disks []Disk, r, chains int) *liftedDesign {
	if r < 2 {
		return nil
	}
	byNode := map[NodeID][]int{}
	for i, d := range disks {
		byNode[d.Node] = append(byNode[d.Node], i)
	}
	nodes := make([]NodeID, 0, len(byNode))
	for n := range byNode {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(a, b int) bool { return nodes[a] < nodes[b] })
	per := len(byNode[nodes[0]])
	grid := make([][]int, len(nodes))
	for i, n := range nodes {
		row := byNode[n]
		if len(row) != per {
			return nil
		}
		sort.Slice(row, func(a, b int) bool { return disks[row[a]].Index < disks[row[b]].Index })
		grid[i] = row
	}
	oa := orthogonalArray(r, per)
	if oa == nil {
		return nil
	}
	var best [][]int
	for _, nd := range nodeDesigns(len(nodes), r, chains/len(oa)) {
		b := len(nd) * len(oa)
		if b > chains {
			continue
		}
		if best == nil || chains/b*b > chains/len(best)*len(best) {
			best = lift(nd, oa, grid)
		}
	}
	if best == nil {
		return nil
	}
	return &liftedDesign{blocks: best, grid: grid}
}

// lift replaces each node block by len(oa) chains: row x of the orthogonal
// array puts the block's i-th replica on disk x[i] of the i-th node. As any two
// columns of the array hold every pair of positions exactly once, two disks on
// different nodes share as many chains as their nodes share blocks.
func lift(nd, oa [][]int, grid [][]int) [][]int {
	out := make([][]int, 0, len(nd)*len(oa))
	for _, b := range nd {
		for _, x := range oa {
			ch := make([]int, len(b))
			for i, n := range b {
				ch[i] = grid[n][x[i]]
			}
			out = append(out, ch)
		}
	}
	return out
}

// orthogonalArray returns an OA(per², r, per, 2): per² rows of r symbols in
// [0, per) such that any two columns hold every pair of symbols once; nil when
// this package knows no construction (r ≥ 4 and per not a prime ≥ r-1).
func orthogonalArray(r, per int) [][]int {
	if per == 1 {
		return [][]int{make([]int, r)}
	}
	if r > 3 && !(isPrime(per) && per >= r-1) {
		return nil
	}
	// Rows (b, a, a+b, a+2b, ...): columns i, j ≥ 1 differ by (i-j)·b, which
	// determines b when per is prime (or when only one such pair exists, r ≤ 3).
	out := make([][]int, 0, per*per)
	for a := range per {
		for b := range per {
			row := make([]int, r)
			row[0] = b
			for j := 1; j < r; j++ {
				row[j] = (a + (j-1)*b) % per
			}
			out = append(out, row)
		}
	}
	return out
}

func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for p := 2; p*p <= n; p++ {
		if n%p == 0 {
			return false
		}
	}
	return true
}

// nodeDesigns lists BIBDs on m points with blocks of size r, each with at
// most limit blocks: Steiner triple systems and the complete design.
func nodeDesigns(m, r, limit int) [][][]int {
	var out [][][]int
	if r == 3 {
		switch m % 6 {
		case 3:
			out = append(out, boseSTS(m))
		case 1:
			out = append(out, skolemSTS(m))
		}
	}
	if binomialAtMost(m, r, limit) {
		out = append(out, completeDesign(m, r))
	}
	return out
}

// binomialAtMost reports whether C(m, r) ≤ limit, without overflow.
func binomialAtMost(m, r, limit int) bool {
	c := 1
	for i := 1; i <= r; i++ {
		c = c * (m - r + i) / i
		if c > limit {
			return false
		}
	}
	return true
}

// completeDesign returns every r-subset of m points: each pair lies in
// C(m-2, r-2) blocks.
func completeDesign(m, r int) [][]int {
	var out [][]int
	cur := make([]int, 0, r)
	var rec func(from int)
	rec = func(from int) {
		if len(cur) == r {
			out = append(out, append([]int(nil), cur...))
			return
		}
		for i := from; i <= m-(r-len(cur)); i++ {
			cur = append(cur, i)
			rec(i + 1)
			cur = cur[:len(cur)-1]
		}
	}
	rec(0)
	return out
}

// boseSTS is Bose's Steiner triple system on v = 6n+3 points, built from the
// idempotent commutative quasigroup i∘j = (i+j)(n+1) mod 2n+1 on Q×{0,1,2}.
func boseSTS(v int) [][]int {
	n := (v - 3) / 6
	q := 2*n + 1
	pt := func(x, k int) int { return (k%3)*q + x }
	var out [][]int
	for i := range q {
		out = append(out, []int{pt(i, 0), pt(i, 1), pt(i, 2)})
	}
	for k := range 3 {
		for i := range q {
			for j := i + 1; j < q; j++ {
				out = append(out, []int{pt(i, k), pt(j, k), pt((i+j)*(n+1)%q, k+1)})
			}
		}
	}
	return out
}

// skolemSTS is Skolem's Steiner triple system on v = 6n+1 points, built from a
// half-idempotent commutative quasigroup of order 2n (i∘i = (i+n)∘(i+n) = i)
// on Q×{0,1,2} plus a point at infinity.
func skolemSTS(v int) [][]int {
	n := (v - 1) / 6
	q := 2 * n
	pt := func(x, k int) int { return (k%3)*q + x }
	inf := 3 * q
	op := func(i, j int) int {
		e := (i + j) % q
		if e%2 == 0 {
			return e / 2
		}
		return (e-1)/2 + n
	}
	var out [][]int
	for i := range n {
		out = append(out, []int{pt(i, 0), pt(i, 1), pt(i, 2)})
		for k := range 3 {
			out = append(out, []int{inf, pt(n+i, k), pt(i, k+1)})
		}
	}
	for k := range 3 {
		for i := range q {
			for j := i + 1; j < q; j++ {
				out = append(out, []int{pt(i, k), pt(j, k), pt(op(i, j), k+1)})
			}
		}
	}
	return out
}

// --- search ---

// searchIterations bounds the annealing: enough moves per replica slot to mix
// small tables thoroughly, capped so that big ones stay well under a second.
func searchIterations(slots int) int {
	return min(max(3000*slots, 200_000), 4_000_000)
}

// searchLayout builds chains chains with per-disk counts balanced and anneals
// them towards equal pair co-occurrence counts.
func searchLayout(disks []Disk, r, chains int, rng *splitmix) ([][]int, error) {
	n := len(disks)
	quota, err := quotas(disks, r, chains, rng)
	if err != nil {
		return nil, err
	}
	// Deal the slots node by node, slot k to chain k mod chains: a node has at
	// most `chains` slots, so its slots land on distinct chains.
	byNode := map[NodeID][]int{}
	var nodes []NodeID
	for _, i := range rng.perm(n) {
		nd := disks[i].Node
		if _, ok := byNode[nd]; !ok {
			nodes = append(nodes, nd)
		}
		byNode[nd] = append(byNode[nd], i)
	}
	table := make([][]int, chains)
	k := 0
	for _, nd := range nodes {
		for _, d := range byNode[nd] {
			for range quota[d] {
				table[k%chains] = append(table[k%chains], d)
				k++
			}
		}
	}
	if r >= 2 {
		anneal(disks, table, searchIterations(chains*r), rng)
	}
	return table, nil
}

// quotas gives each disk its number of chains: round by round, one more to
// every disk whose node is not yet in every chain, so counts stay within one
// of each other except on nodes that hit that cap.
func quotas(disks []Disk, r, chains int, rng *splitmix) ([]int, error) {
	q := make([]int, len(disks))
	nodeSlots := map[NodeID]int{}
	order := rng.perm(len(disks))
	left := r * chains
	for left > 0 {
		gave := false
		for _, d := range order {
			if left == 0 {
				break
			}
			if nodeSlots[disks[d].Node] >= chains {
				continue
			}
			q[d]++
			nodeSlots[disks[d].Node]++
			left--
			gave = true
		}
		if !gave {
			return nil, fmt.Errorf("%w: cannot fit %d chains of %d replicas", ErrPlacement, chains, r)
		}
	}
	return q, nil
}

// anneal swaps disks between chains, never putting two replicas of a chain on
// one node, to minimise Σ λ² over disk pairs (λ = chains the pair shares).
// With the total Σ λ fixed by the chain count, that drives every λ towards
// the mean, which is what spreads a failed disk's load. Swaps keep per-disk
// chain counts. The last fifth of the iterations only accepts non-worsening
// moves, so the result is a local minimum.
func anneal(disks []Disk, table [][]int, iters int, rng *splitmix) {
	n, b, r := len(disks), len(table), len(table[0])
	if b < 2 {
		return
	}
	lam := make([]int32, n*n)
	at := func(x, y int) *int32 {
		if x > y {
			x, y = y, x
		}
		return &lam[x*n+y]
	}
	for _, ch := range table {
		for i := range ch {
			for j := i + 1; j < len(ch); j++ {
				*at(ch[i], ch[j])++
			}
		}
	}
	// replace puts disk d in slot s of chain ch and returns the change of Σλ².
	replace := func(ch []int, s, d int) int {
		old := ch[s]
		delta := 0
		for j, x := range ch {
			if j == s {
				continue
			}
			p := at(old, x)
			delta += 1 - 2*int(*p)
			*p--
			p = at(d, x)
			delta += 1 + 2*int(*p)
			*p++
		}
		ch[s] = d
		return delta
	}
	fits := func(ch []int, s, d int) bool {
		for j, x := range ch {
			if j != s && disks[x].Node == disks[d].Node {
				return false
			}
		}
		return true
	}
	const t0, t1 = 2.0, 0.1
	hot := iters * 4 / 5
	temp := t0
	cool := math.Pow(t1/t0, 1/float64(max(hot, 1)))
	for it := range iters {
		c1, c2 := rng.intn(b), rng.intn(b)
		if c1 == c2 {
			continue
		}
		ch1, ch2 := table[c1], table[c2]
		s1, s2 := rng.intn(r), rng.intn(r)
		d1, d2 := ch1[s1], ch2[s2]
		if d1 == d2 || !fits(ch1, s1, d2) || !fits(ch2, s2, d1) {
			continue
		}
		delta := replace(ch1, s1, d2) + replace(ch2, s2, d1)
		accept := delta <= 0
		if !accept && it < hot {
			accept = rng.float() < math.Exp(-float64(delta)/temp)
		}
		if !accept {
			replace(ch2, s2, d2)
			replace(ch1, s1, d1)
		}
		if it < hot {
			temp *= cool
		}
	}
}

// assignHeads picks each chain's head (moved to the front) so that head counts
// are balanced: it starts greedy, then moves heads along alternating paths —
// chain A's head moves to a disk that gives up its head of chain B, and so on —
// from a disk with h heads to one with at most h-2, until no such path exists.
// Each move lowers Σ heads², so this ends, and at the end no disk's head count
// can be lowered without raising another one's to at least as much.
func assignHeads(n int, table [][]int) {
	heads := make([]int, n)
	head := make([]int, len(table)) // slot of the head in each chain
	for c, ch := range table {
		best := 0
		for s, d := range ch {
			if heads[d] < heads[ch[best]] {
				best = s
			}
		}
		head[c] = best
		heads[ch[best]]++
	}
	headOf := func(c int) int { return table[c][head[c]] }
	prevChain := make([]int, n)
	seen := make([]bool, n)
	for improved := true; improved; {
		improved = false
		led := make([][]int, n) // chains each disk heads
		for c := range table {
			led[headOf(c)] = append(led[headOf(c)], c)
		}
		lowest := heads[0]
		for _, h := range heads {
			lowest = min(lowest, h)
		}
		for u := range n {
			if heads[u] < lowest+2 {
				continue // no disk has few enough heads to take one of u's
			}
			// BFS from u over "u's chain c can be led by w instead".
			for i := range seen {
				seen[i] = false
			}
			seen[u] = true
			queue := []int{u}
			found := -1
			for len(queue) > 0 && found < 0 {
				x := queue[0]
				queue = queue[1:]
				for _, c := range led[x] {
					for _, w := range table[c] {
						if seen[w] {
							continue
						}
						seen[w] = true
						prevChain[w] = c
						if heads[w] <= heads[u]-2 {
							found = w
							break
						}
						queue = append(queue, w)
					}
					if found >= 0 {
						break
					}
				}
			}
			if found < 0 {
				continue
			}
			// Walk back: each chain on the path gets the later disk as head.
			for w := found; w != u; {
				c := prevChain[w]
				from := headOf(c)
				for s, d := range table[c] {
					if d == w {
						head[c] = s
					}
				}
				w = from
			}
			heads[u]--
			heads[found]++
			improved = true
			lowest = heads[0]
			for _, h := range heads {
				lowest = min(lowest, h)
			}
			led = make([][]int, n)
			for c := range table {
				led[headOf(c)] = append(led[headOf(c)], c)
			}
		}
	}
	for c, ch := range table {
		s := head[c]
		h := ch[s]
		copy(ch[1:s+1], ch[:s])
		ch[0] = h
	}
}

// splitmix is a small seeded generator (SplitMix64), written out here so that
// tables depend only on the seed, not on the Go version's math/rand.
type splitmix struct{ s uint64 }

func (g *splitmix) next() uint64 {
	g.s += 0x9e3779b97f4a7c15
	z := g.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a number in [0, n) (multiply-shift; the bias is negligible).
func (g *splitmix) intn(n int) int {
	hi, _ := bits.Mul64(g.next(), uint64(n))
	return int(hi)
}

func (g *splitmix) float() float64 { return float64(g.next()>>11) / (1 << 53) }

func (g *splitmix) perm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := g.intn(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// --- explanation ---

// Balance describes how evenly a chain table spreads load. Reads of a chain
// are assumed equal across chains and spread evenly over its replicas; when
// disk d fails, its share of chain c moves evenly to c's other replicas. The
// "share" of survivor s is the fraction of d's read load that s takes over.
type Balance struct {
	Disks, Nodes, Replicas, Chains int
	ChainsMin, ChainsMax           int // chains per disk
	HeadsMin, HeadsMax             int // chains led per disk (heads take the writes)
	PairMin, PairMax               int // chains shared by two disks on different nodes

	// Worst is the largest share, over every failed disk and survivor, of the
	// failed disk's reads that lands on that one survivor (WorstFailed and
	// WorstSurvivor are its disk indices, -1 when there is none).
	Worst                      float64
	WorstFailed, WorstSurvivor int
	// Ideal is 1/(Disks-1): the load spread over every other disk.
	Ideal float64
	// Bound is a lower bound on Worst for any table with these per-disk chain
	// counts: a disk in k chains of r replicas has k(r-1) replica slots beside
	// it, spread over at most the disks on other nodes. Exact for tables whose
	// chains all have Replicas disks.
	Bound float64
	// Simple is Worst for SimpleLayout with the same disks, replicas and chain
	// count; 0 when that layout does not exist.
	Simple float64
	// Invalid counts chains that break the rules: wrong length, disk index out
	// of range, or two replicas on one node. They are left out of the figures.
	Invalid int
}

// Explain measures table (indices into disks, head first). Chains that break
// the rules are counted in Invalid and otherwise ignored.
func Explain(disks []Disk, table [][]int) Balance {
	b := Balance{Disks: len(disks), Chains: len(table), WorstFailed: -1, WorstSurvivor: -1}
	perNode := map[NodeID]int{}
	for _, d := range disks {
		perNode[d.Node]++
	}
	b.Nodes = len(perNode)
	if len(table) > 0 {
		b.Replicas = len(table[0])
	}
	if b.Disks > 1 {
		b.Ideal = 1 / float64(b.Disks-1)
	}
	var valid [][]int
	for _, ch := range table {
		if len(ch) != b.Replicas || checkChain(disks, ch) != nil {
			b.Invalid++
			continue
		}
		valid = append(valid, ch)
	}
	st := measure(disks, valid)
	b.ChainsMin, b.ChainsMax = minMax(st.chains)
	b.HeadsMin, b.HeadsMax = minMax(st.heads)
	b.PairMin, b.PairMax = st.pairMin, st.pairMax
	b.Worst, b.WorstFailed, b.WorstSurvivor = st.worst, st.failed, st.survivor
	for d, k := range st.chains {
		slots := k * (b.Replicas - 1)
		reach := len(disks) - perNode[disks[d].Node]
		if slots == 0 || reach == 0 {
			continue
		}
		b.Bound = max(b.Bound, float64((slots+reach-1)/reach)/float64(slots))
	}
	if b.Replicas >= 1 && b.Chains >= 1 {
		if simple, err := SimpleLayout(disks, b.Replicas, b.Chains); err == nil {
			b.Simple = measure(disks, simple).worst
		}
	}
	return b
}

type stats struct {
	chains, heads    []int
	pairMin, pairMax int
	worst            float64
	failed, survivor int
}

// measure computes the figures of a table known to be valid, in memory
// linear in the table and the number of disks.
func measure(disks []Disk, table [][]int) stats {
	n := len(disks)
	st := stats{chains: make([]int, n), heads: make([]int, n), failed: -1, survivor: -1}
	member := make([][]int, n) // chains of each disk
	for c, ch := range table {
		if len(ch) > 0 {
			st.heads[ch[0]]++
		}
		for _, d := range ch {
			st.chains[d]++
			member[d] = append(member[d], c)
		}
	}
	pairs := make([]int, n)     // chains d shares with each disk
	moved := make([]float64, n) // load d hands each disk when it fails
	first := true
	for d := range n {
		clear(pairs)
		clear(moved)
		load := 0.0 // d's read load, in chains
		for _, c := range member[d] {
			k := len(table[c])
			load += 1 / float64(k)
			for _, s := range table[c] {
				if s != d {
					pairs[s]++
					moved[s] += 1 / float64(k*(k-1))
				}
			}
		}
		for s := range n {
			if disks[s].Node == disks[d].Node {
				continue
			}
			if first {
				st.pairMin, st.pairMax, first = pairs[s], pairs[s], false
			} else {
				st.pairMin, st.pairMax = min(st.pairMin, pairs[s]), max(st.pairMax, pairs[s])
			}
			if load > 0 {
				if sh := moved[s] / load; sh > st.worst {
					st.worst, st.failed, st.survivor = sh, d, s
				}
			}
		}
	}
	return st
}

func minMax(xs []int) (lo, hi int) {
	for i, x := range xs {
		if i == 0 || x < lo {
			lo = x
		}
		if i == 0 || x > hi {
			hi = x
		}
	}
	return lo, hi
}

// String is the short report `flyfs admin chains --explain` prints.
func (b Balance) String() string {
	var w strings.Builder
	fmt.Fprintf(&w, "%d disks on %d nodes, %d replicas, %d chains; chains per disk %d..%d; heads per disk %d..%d",
		b.Disks, b.Nodes, b.Replicas, b.Chains, b.ChainsMin, b.ChainsMax, b.HeadsMin, b.HeadsMax)
	if b.Replicas < 2 {
		w.WriteString("; no surviving replica takes over a failed disk's reads")
	} else {
		fmt.Fprintf(&w, "; chains shared by two disks on different nodes %d..%d", b.PairMin, b.PairMax)
		fmt.Fprintf(&w, "; worst share of a failed disk's reads on one surviving disk: %.4f (ideal %.4f", b.Worst, b.Ideal)
		if math.Abs(b.Bound-b.Ideal) > 1e-9 {
			fmt.Fprintf(&w, ", best possible for this shape %.4f", b.Bound)
		}
		if b.Simple > 0 {
			fmt.Fprintf(&w, ", simple layout %.4f", b.Simple)
		}
		w.WriteString(")")
	}
	if b.Invalid > 0 {
		fmt.Fprintf(&w, "; %d chains break the rules and were left out", b.Invalid)
	}
	return w.String()
}
