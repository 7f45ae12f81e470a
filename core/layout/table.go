package layout

import (
	"errors"
	"fmt"
	"slices"

	"github.com/flyfs/flyfs/core/routing"
)

// ErrTable is wrapped by every error about a chain table: an invalid table, an
// unknown (id, version), or an attempt to rewrite a published version.
var ErrTable = errors.New("layout: chain table")

// ChainTable is one version of a chain table: the ordered list of chains that
// files created against it are striped over.
//
// Invariants (checked by Validate, enforced by TableSet.Add):
//   - ID ≥ 1 and Version ≥ 1; 0 is reserved for "unset" / "latest", which
//     only means something when a file is being created and is never pinned.
//   - Chains is non-empty and holds no chain twice, so the stripe's positions
//     map to distinct chains.
//   - A published (ID, Version) never changes. A file pins the version it was
//     created with, so if a version could be rewritten, existing chunks would
//     silently move to other chains. A new arrangement is a new version.
//
// A ChainTable is treated as immutable: whoever obtains one must not modify
// Chains.
type ChainTable struct {
	ID      uint32            `cbor:"1,keyasint"`
	Version uint32            `cbor:"2,keyasint"`
	Chains  []routing.ChainID `cbor:"3,keyasint"`
}

// Validate checks the table's invariants.
func (t ChainTable) Validate() error {
	if t.ID == 0 {
		return fmt.Errorf("%w: id 0 is reserved", ErrTable)
	}
	if t.Version == 0 {
		return fmt.Errorf("%w %d: version 0 is reserved", ErrTable, t.ID)
	}
	if len(t.Chains) == 0 {
		return fmt.Errorf("%w %d v%d: no chains", ErrTable, t.ID, t.Version)
	}
	if uint64(len(t.Chains)) > maxTableLen {
		return fmt.Errorf("%w %d v%d: %d chains, at most %d", ErrTable, t.ID, t.Version, len(t.Chains), uint64(maxTableLen))
	}
	seen := make(map[routing.ChainID]int, len(t.Chains))
	for i, c := range t.Chains {
		if j, dup := seen[c]; dup {
			return fmt.Errorf("%w %d v%d: chain %d at indexes %d and %d", ErrTable, t.ID, t.Version, c, j, i)
		}
		seen[c] = i
	}
	return nil
}

// maxTableLen keeps every table index representable in a uint32 (Layout.First
// and Layout.Stripe are uint32).
const maxTableLen = 1<<32 - 1

func (t ChainTable) equal(o ChainTable) bool {
	return t.ID == o.ID && t.Version == o.Version && slices.Equal(t.Chains, o.Chains)
}

// Tables looks up one version of a chain table.
type Tables interface {
	// Table returns table id at exactly version; ok is false if it is unknown.
	// Version 0 is never found: callers wanting the latest use Latest.
	Table(id, version uint32) (t ChainTable, ok bool)
}

// TableSet holds every version of every chain table: id → versions, where
// element v-1 is version v. It is append-only through Add. The zero value is
// not usable; make one with make(TableSet) or NewTableSet.
type TableSet map[uint32][]ChainTable

var _ Tables = TableSet(nil)

// NewTableSet returns a set holding tables, added in order.
func NewTableSet(tables ...ChainTable) (TableSet, error) {
	s := make(TableSet)
	for _, t := range tables {
		if err := s.Add(t); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Table implements Tables.
func (s TableSet) Table(id, version uint32) (ChainTable, bool) {
	vs := s[id]
	if version == 0 || uint64(version) > uint64(len(vs)) {
		return ChainTable{}, false
	}
	return vs[version-1], true
}

// Latest returns the newest version of table id: the one a new file pins.
func (s TableSet) Latest(id uint32) (ChainTable, bool) {
	vs := s[id]
	if len(vs) == 0 {
		return ChainTable{}, false
	}
	return vs[len(vs)-1], true
}

// Add publishes t. Its version must be the next one of its id (1 for a new
// id); adding a version that already exists succeeds only if it is identical,
// so replaying a log of tables is harmless but rewriting history is refused.
// Add keeps its own copy of t.Chains.
func (s TableSet) Add(t ChainTable) error {
	if err := t.Validate(); err != nil {
		return err
	}
	vs := s[t.ID]
	if uint64(t.Version) <= uint64(len(vs)) {
		if vs[t.Version-1].equal(t) {
			return nil
		}
		return fmt.Errorf("%w %d v%d: already published with other chains; publish a new version instead", ErrTable, t.ID, t.Version)
	}
	if uint64(t.Version) != uint64(len(vs))+1 {
		return fmt.Errorf("%w %d v%d: next version is %d", ErrTable, t.ID, t.Version, len(vs)+1)
	}
	t.Chains = slices.Clone(t.Chains)
	s[t.ID] = append(vs, t)
	return nil
}
