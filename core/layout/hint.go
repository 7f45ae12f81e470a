package layout

import "github.com/flyfs/flyfs/core/routing"

// The chain-count hint serves the file-length protocol. A file's length is
// settled by asking chains for the inode's last chunk; a file of few chunks
// lives only on the chains of its first stripe positions, so asking every one
// of a wide stripe wastes RPCs. The hint is an upper bound, in chunks, on how
// many chunks the file may have reached: it starts at InitialHint and doubles
// (GrowHint) before a write goes beyond it. It only narrows queries; the
// chunk → chain mapping ignores it.

// InitialHint is the chain-count hint of a new file, in chunks.
const InitialHint = 16

// GrowHint returns the hint to record before a write that makes the file
// reach chunks chunks: hint doubled until it covers chunks, or unchanged if it
// already does. Once the hint reaches the stripe every chain is queried
// anyway, so it stops at the first power-of-two step ≥ stripe. A hint of 0
// means "unknown, query every chain" and stays 0.
func GrowHint(hint uint32, chunks uint64, stripe uint32) uint32 {
	if hint == 0 {
		return 0
	}
	for uint64(hint) < chunks && hint < stripe {
		if hint > 1<<31-1 {
			return hint
		}
		hint *= 2
	}
	return hint
}

// LastChunkChains returns the chains that can hold the last chunk of a file
// whose chunk count is at most hint: the distinct chains of chunk indexes
// [0, hint), in stripe order, at most Stripe of them. A hint of 0 (unknown)
// or ≥ Stripe gives all of the file's chains. It fails if l does not fit t
// (see Check): an empty answer would wrongly say the file has no chunks.
func LastChunkChains(l Layout, t ChainTable, hint uint32) ([]routing.ChainID, error) {
	chains, err := l.Chains(t)
	if err != nil {
		return nil, err
	}
	if hint == 0 || uint64(hint) >= uint64(len(chains)) {
		return chains, nil
	}
	return chains[:hint], nil
}
