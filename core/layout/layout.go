package layout

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/flyfs/flyfs/core/routing"
)

// ErrLayout is wrapped by every error about an invalid layout or a layout
// that does not fit the chain table it is resolved against.
var ErrLayout = errors.New("layout")

// Bounds of a valid layout.
const (
	MinChunkSize = 64 << 10 // 64 KiB
	MaxChunkSize = 64 << 20 // 64 MiB
	// MaxStripe bounds the chains per file (3FS runs 200 in production). It
	// also bounds the permutation a corrupt layout can make a client allocate.
	MaxStripe = 1 << 16
)

// Layout says where a file's chunks live. It is chosen once, when the file is
// created (NewLayout), stored in the inode, and never changes: every client
// computes every chunk's chain from it alone, so metad stays off the data path.
//
// Mapping, for chunk index i (offset / ChunkSize):
//
//	pos   = i % Stripe                  // the file's stripe position
//	index = (First + perm[pos]) % len(table.Chains)
//	chain = table.Chains[index]
//
// where perm = Permutation(Algo, Seed, Stripe) and table is chain table
// TableID at exactly TableVersion. So chunks i and i+Stripe share a chain,
// and each round of Stripe consecutive chunks uses each of the file's chains
// once.
//
// First is 0-based. 3FS stores the same thing 1-based (baseIndex = First+1)
// and subtracts one on lookup; we skip that step. The stripe wraps around the
// end of the table.
type Layout struct {
	TableID      uint32 `cbor:"1,keyasint"`
	TableVersion uint32 `cbor:"2,keyasint"` // pinned at create; never 0 ("latest") in a file
	ChunkSize    uint32 `cbor:"3,keyasint"` // power of two in [MinChunkSize, MaxChunkSize]
	Stripe       uint32 `cbor:"4,keyasint"` // chains per file, in [1, min(MaxStripe, len(table))]
	First        uint32 `cbor:"5,keyasint"` // 0-based table index where the file's range starts
	Seed         uint64 `cbor:"6,keyasint"` // per-file shuffle seed
	Algo         uint8  `cbor:"7,keyasint"` // shuffle algorithm id, see shuffle.go
}

// NewLayout picks the layout of a new file on table t: Stripe consecutive
// chains starting at counter % len(t.Chains), shuffled by seed with
// DefaultAlgo, pinning t's id and version.
//
// counter is the caller's round-robin cursor for (t.ID, stripe). Advance it
// by stripe per file, as 3FS does, so consecutive files get disjoint ranges
// and every chain is used equally; seed it randomly (aligned to stripe) per
// metad instance if several allocate concurrently. seed should be random.
//
// NewLayout does not fail: its result must be checked with Check(t) before it
// is stored, which rejects a bad chunk size, a stripe longer than the table,
// or an empty table.
func NewLayout(t ChainTable, chunkSize, stripe uint32, counter uint64, seed uint64) Layout {
	l := Layout{
		TableID:      t.ID,
		TableVersion: t.Version,
		ChunkSize:    chunkSize,
		Stripe:       stripe,
		Seed:         seed,
		Algo:         DefaultAlgo,
	}
	if n := uint64(len(t.Chains)); n > 0 {
		l.First = uint32(counter % n)
	}
	return l
}

// Validate checks what a layout must satisfy whatever its table: ids set, a
// power-of-two chunk size in range, a stripe in [1, MaxStripe], a known
// shuffle algorithm. Check also checks it against the table.
func (l Layout) Validate() error {
	switch {
	case l.TableID == 0:
		return fmt.Errorf("%w: table id 0 is reserved", ErrLayout)
	case l.TableVersion == 0:
		return fmt.Errorf("%w: table version 0 (\"latest\") cannot be pinned by a file", ErrLayout)
	case l.ChunkSize < MinChunkSize || l.ChunkSize > MaxChunkSize || bits.OnesCount32(l.ChunkSize) != 1:
		return fmt.Errorf("%w: chunk size %d is not a power of two in [64 KiB, 64 MiB]", ErrLayout, l.ChunkSize)
	case l.Stripe == 0:
		return fmt.Errorf("%w: stripe 0, need at least one chain", ErrLayout)
	case l.Stripe > MaxStripe:
		return fmt.Errorf("%w: stripe %d exceeds the maximum %d", ErrLayout, l.Stripe, MaxStripe)
	case !KnownAlgo(l.Algo):
		return fmt.Errorf("%w: unknown shuffle algorithm %d", ErrLayout, l.Algo)
	}
	return nil
}

// Check validates l and that it fits t: t is exactly the pinned table
// version, the stripe is no longer than the table, and First is an index of
// it. It trusts t itself to be valid (TableSet.Add checks that), so it is
// cheap enough to run per I/O.
func (l Layout) Check(t ChainTable) error {
	if err := l.Validate(); err != nil {
		return err
	}
	n := uint64(len(t.Chains))
	switch {
	case t.ID != l.TableID || t.Version != l.TableVersion:
		return fmt.Errorf("%w: pins table %d v%d, given %d v%d", ErrLayout, l.TableID, l.TableVersion, t.ID, t.Version)
	case n == 0:
		return fmt.Errorf("%w: table %d v%d has no chains", ErrLayout, t.ID, t.Version)
	case uint64(l.Stripe) > n:
		return fmt.Errorf("%w: stripe %d is longer than table %d v%d (%d chains)", ErrLayout, l.Stripe, t.ID, t.Version, n)
	case uint64(l.First) >= n:
		return fmt.Errorf("%w: first index %d outside table %d v%d (%d chains)", ErrLayout, l.First, t.ID, t.Version, n)
	}
	return nil
}

// Table looks up the table version l pins.
func (l Layout) Table(ts Tables) (ChainTable, error) {
	if l.TableVersion == 0 {
		return ChainTable{}, fmt.Errorf("%w: table version 0 (\"latest\") cannot be pinned by a file", ErrLayout)
	}
	t, ok := ts.Table(l.TableID, l.TableVersion)
	if !ok {
		return ChainTable{}, fmt.Errorf("%w %d v%d: unknown", ErrTable, l.TableID, l.TableVersion)
	}
	return t, nil
}

// Chains returns the file's chains in stripe order: element pos is the chain
// of every chunk i with i % Stripe == pos. They are distinct (t has no
// duplicates). Callers on the I/O path should compute this once per open
// file and index it, rather than call Chain per chunk.
func (l Layout) Chains(t ChainTable) ([]routing.ChainID, error) {
	if err := l.Check(t); err != nil {
		return nil, err
	}
	perm, err := Permutation(l.Algo, l.Seed, l.Stripe)
	if err != nil {
		return nil, err
	}
	n := uint64(len(t.Chains))
	out := make([]routing.ChainID, len(perm))
	for pos, k := range perm {
		out[pos] = t.Chains[(uint64(l.First)+uint64(k))%n]
	}
	return out, nil
}

// Chain returns the chain that holds chunk chunkIndex of the file.
func (l Layout) Chain(t ChainTable, chunkIndex uint64) (routing.ChainID, error) {
	chains, err := l.Chains(t)
	if err != nil {
		return 0, err
	}
	return chains[chunkIndex%uint64(l.Stripe)], nil
}

// ChunkIndex is the index of the chunk holding byte offset. Like ChunkOffset
// and ChunkID it is meaningful only for a valid layout; it never panics (a
// zero chunk size gives 0).
func (l Layout) ChunkIndex(offset uint64) uint64 {
	if l.ChunkSize == 0 {
		return 0
	}
	return offset / uint64(l.ChunkSize)
}

// ChunkOffset is the position of byte offset inside its chunk.
func (l Layout) ChunkOffset(offset uint64) uint32 {
	if l.ChunkSize == 0 {
		return 0
	}
	return uint32(offset % uint64(l.ChunkSize))
}

// ChunkID is the id of the chunk of inode that holds byte offset.
func (l Layout) ChunkID(inode, offset uint64) ChunkID {
	return MakeChunkID(inode, l.ChunkIndex(offset))
}

func (l Layout) String() string {
	return fmt.Sprintf("table %d v%d chunk %d stripe %d first %d seed %#x algo %d",
		l.TableID, l.TableVersion, l.ChunkSize, l.Stripe, l.First, l.Seed, l.Algo)
}
