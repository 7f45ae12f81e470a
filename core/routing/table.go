package routing

import (
	"errors"
	"fmt"
	"math"
)

// TableSpec asks for a chain table: Chains chains of Replicas targets over
// DisksPerNode disks (indices 0..n-1) of each of Nodes, placed by Layout
// ("balanced", the default, or "simple") and numbered from FirstChain.
// `flyfs admin create-chains` and the console's chain-table form both
// build theirs from one.
type TableSpec struct {
	Nodes        []NodeID
	DisksPerNode int
	Replicas     int
	Chains       int
	Layout       string
	Seed         uint64 // the balanced layout's search
	FirstChain   ChainID
}

// NewTable is a computed table: the chains to create, and the disks and
// placement rows they came from (for Explain).
type NewTable struct {
	Chains []Chain
	Disks  []Disk
	Rows   [][]int
}

// TargetIDOf is the target id of a chain's replica at pos (0 = head):
// chain id * 100 + pos + 1, so chain 7's targets are 701, 702, 703.
func TargetIDOf(chain ChainID, pos int) TargetID {
	return TargetID(uint32(chain)*100 + uint32(pos) + 1)
}

// A table holds at most MaxTableChains chains over MaxTableDisks disks:
// computing one is linear in its size (100,000 chains take seconds), and a
// request from the network must not ask for hours.
const (
	MaxTableChains = 100_000
	MaxTableDisks  = 16_384
)

// Build checks the spec and computes its table; it is pure and, for a
// seed, deterministic.
func (s TableSpec) Build() (NewTable, error) {
	switch {
	case len(s.Nodes) == 0:
		return NewTable{}, errors.New("no storage nodes to place chains on")
	case s.Chains < 1 || s.Chains > MaxTableChains:
		return NewTable{}, fmt.Errorf("%d chains: want 1..%d", s.Chains, MaxTableChains)
	case s.DisksPerNode < 1 || s.DisksPerNode > MaxTableDisks || len(s.Nodes)*s.DisksPerNode > MaxTableDisks:
		return NewTable{}, fmt.Errorf("%d disks per node on %d nodes: want at least 1 and at most %d disks in all", s.DisksPerNode, len(s.Nodes), MaxTableDisks)
	case s.Replicas < 1 || s.Replicas > 99:
		return NewTable{}, fmt.Errorf("%d replicas: want 1..99 (target ids are chain*100 + position)", s.Replicas)
	case s.FirstChain < 1:
		return NewTable{}, errors.New("first chain 0: chain id 0 is reserved")
	}
	if last := uint64(s.FirstChain) + uint64(s.Chains) - 1; last*100+99 > math.MaxUint32 {
		return NewTable{}, fmt.Errorf("chain ids up to %d: target ids (chain*100 + position) would not fit 32 bits", last)
	}
	var disks []Disk
	seen := map[NodeID]bool{}
	for _, n := range s.Nodes {
		if n == 0 {
			return NewTable{}, errors.New("node 0 is not a storage node id")
		}
		if seen[n] {
			return NewTable{}, fmt.Errorf("node %d listed twice", n)
		}
		seen[n] = true
		for d := range s.DisksPerNode {
			disks = append(disks, Disk{Node: n, Index: d})
		}
	}
	var rows [][]int
	var err error
	switch s.Layout {
	case "balanced", "":
		rows, err = BalancedLayout(disks, s.Replicas, s.Chains, s.Seed)
	case "simple":
		rows, err = SimpleLayout(disks, s.Replicas, s.Chains)
	default:
		return NewTable{}, fmt.Errorf("layout %q: want balanced or simple", s.Layout)
	}
	if err != nil {
		return NewTable{}, err
	}
	chains := make([]Chain, len(rows))
	for i, row := range rows {
		id := s.FirstChain + ChainID(i)
		chains[i] = Chain{ID: id}
		for pos, di := range row {
			chains[i].Targets = append(chains[i].Targets, Target{ID: TargetIDOf(id, pos), Node: disks[di].Node, Disk: disks[di].Index})
		}
	}
	return NewTable{Chains: chains, Disks: disks, Rows: rows}, nil
}

// Overlap is the first chain of t whose id, or a target id, info has
// already (0: none), so a table is created beside the existing ones and
// never over them.
func (t NewTable) Overlap(info *Info) ChainID {
	targets := map[TargetID]bool{}
	for _, c := range info.Chains {
		for _, tg := range c.Targets {
			targets[tg.ID] = true
		}
	}
	for _, c := range t.Chains {
		if _, exists := info.Chains[c.ID]; exists {
			return c.ID
		}
		for _, tg := range c.Targets {
			if targets[tg.ID] {
				return c.ID
			}
		}
	}
	return 0
}

// MaxChainID is the largest chain id in info (0: no chains).
func (in *Info) MaxChainID() ChainID {
	var m ChainID
	for id := range in.Chains {
		m = max(m, id)
	}
	return m
}
