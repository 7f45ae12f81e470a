package metad

import (
	"github.com/flyfs/flyfs/core/routing"
)

// fullChains is the set of chains a replica of which sits on a full disk:
// writes to them fail until space returns, so new files avoid them.
type fullChains map[routing.ChainID]bool

// fullChainsOf reads them off routing, which publishes each target's disk
// as full or not.
func fullChainsOf(info *routing.Info) fullChains {
	out := fullChains{}
	for id, c := range info.Chains {
		for _, t := range c.Targets {
			if t.Full && (t.Public == routing.Serving || t.Public == routing.Syncing) {
				out[id] = true
			}
		}
	}
	return out
}

// roomWindow picks where a file's stripe of want consecutive chains starts
// in a table of chains, the counter-th time: among the starts whose window
// holds no full chain, round-robin; when no window of want chains has room,
// the longest run of chains with room, shrinking the stripe to it; when
// every chain is full, start as counter says (the writes will fail until
// space returns). It returns the start index and the stripe.
func roomWindow(chains []routing.ChainID, full fullChains, want uint32, counter uint64) (first, stripe uint32) {
	n := len(chains)
	if n == 0 || len(full) == 0 {
		return uint32(counter % uint64(max(n, 1))), want
	}
	// run[i]: chains with room from i on, wrapping, at most n.
	run := make([]int, n)
	for step := 0; step < 2*n; step++ { // two passes settle the wrap-around
		i := (2*n - 1 - step) % n
		if full[chains[i]] {
			run[i] = 0
		} else {
			run[i] = min(1+run[(i+1)%n], n)
		}
	}
	longest := 0
	for _, r := range run {
		longest = max(longest, r)
	}
	if longest == 0 {
		return uint32(counter % uint64(n)), want
	}
	stripe = min(want, uint32(longest))
	var starts []uint32
	for i, r := range run {
		if r >= int(stripe) {
			starts = append(starts, uint32(i))
		}
	}
	return starts[counter%uint64(len(starts))], stripe
}
