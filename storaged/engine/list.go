package engine

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/flyfs/flyfs/core/layout"
)

// Entry is one chunk returned by List.
type Entry struct {
	Chunk layout.ChunkID
	Meta  Meta
}

// List returns the chunks of chain with ids in [begin, end), in ascending id
// order, or descending with reverse (so the last chunk of an inode is one
// seek). An all-zero end means no upper bound. At most limit entries are
// returned (limit <= 0: all); more reports that the range holds further
// chunks. List reads the committed records, not the in-memory index.
// Records that fail validation are skipped (and reported by Get/Verify).
func (e *Engine) List(chain uint32, begin, end layout.ChunkID, limit int, reverse bool) ([]Entry, bool, error) {
	if err := e.begin(); err != nil {
		return nil, false, err
	}
	defer e.end()
	lo := encodeKey(nil, Key{Chain: chain, Chunk: begin})
	var hi []byte
	switch {
	case end != layout.ChunkID{}:
		hi = encodeKey(nil, Key{Chain: chain, Chunk: end})
	case chain == ^uint32(0):
		hi = []byte{prefixChunk + 1}
	default:
		hi = encodeKey(nil, Key{Chain: chain + 1})
	}
	if bytes.Compare(lo, hi) >= 0 {
		return nil, false, nil
	}
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, false, fmt.Errorf("engine: list chain %d: %w", chain, err)
	}
	var out []Entry
	more := false
	ok := it.First()
	if reverse {
		ok = it.Last()
	}
	for ; ok; ok = step(it, reverse) {
		k, kok := decodeKey(it.Key())
		if !kok {
			continue
		}
		val, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return nil, false, fmt.Errorf("engine: list chain %d: %w", chain, err)
		}
		r, err := decodeRecord(val, e.seg)
		if err != nil {
			e.log.Error("engine: list skips corrupt record", "chunk", k.String(), "err", err)
			continue
		}
		if limit > 0 && len(out) == limit {
			more = true
			break
		}
		out = append(out, Entry{Chunk: k.Chunk, Meta: r.meta})
	}
	if err := it.Close(); err != nil {
		return nil, false, fmt.Errorf("engine: list chain %d: %w", chain, err)
	}
	return out, more, nil
}

func step(it *pebble.Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}
