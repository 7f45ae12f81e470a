package kv

import (
	"bytes"
	"sort"

	"github.com/google/btree"
)

// mutation is the buffered final state of one key: a value, or cleared.
type mutation struct {
	key     []byte
	value   []byte
	cleared bool
}

// writeSet buffers a transaction's writes in their final, normalised form:
// one mutation per key, and sorted, disjoint clear ranges. A cleared key inside a
// clear range is not kept (the range covers it); a set inside one is.
type writeSet struct {
	muts    *btree.BTreeG[*mutation]
	ranges  []KeyRange
	stamped []StampedOp
}

func newWriteSet() *writeSet {
	return &writeSet{muts: btree.NewG(16, func(a, b *mutation) bool { return bytes.Compare(a.key, b.key) < 0 })}
}

func (w *writeSet) set(key, value []byte) {
	w.muts.ReplaceOrInsert(&mutation{key: key, value: value})
}

func (w *writeSet) clear(key []byte) {
	if w.inRange(key) {
		w.muts.Delete(&mutation{key: key})
		return
	}
	w.muts.ReplaceOrInsert(&mutation{key: key, cleared: true})
}

func (w *writeSet) clearRange(r KeyRange) {
	var drop []*mutation
	w.ascend(r.Begin, r.End, func(m *mutation) bool { drop = append(drop, m); return true })
	for _, m := range drop {
		w.muts.Delete(m)
	}
	// Merge r into the sorted, disjoint list.
	out := make([]KeyRange, 0, len(w.ranges)+1)
	merged := r
	for _, x := range w.ranges {
		switch {
		case x.End != nil && bytes.Compare(x.End, merged.Begin) < 0:
			out = append(out, x) // wholly before
		case merged.End != nil && bytes.Compare(merged.End, x.Begin) < 0:
			out = append(out, x) // wholly after
		default: // overlapping or touching: absorb
			if bytes.Compare(x.Begin, merged.Begin) < 0 {
				merged.Begin = x.Begin
			}
			if compareEnd(x.End, merged.End) > 0 {
				merged.End = x.End
			}
		}
	}
	out = append(out, merged)
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].Begin, out[j].Begin) < 0 })
	w.ranges = out
}

// inRange reports whether a buffered clear range covers key.
func (w *writeSet) inRange(key []byte) bool {
	i := sort.Search(len(w.ranges), func(i int) bool { return compareEnd(w.ranges[i].End, key) > 0 })
	return i < len(w.ranges) && w.ranges[i].Contains(key)
}

// lookup tells what the buffer says about key: known is false when the buffer
// has no opinion and the read must go to the engine.
func (w *writeSet) lookup(key []byte) (value []byte, found, known bool) {
	if m, ok := w.muts.Get(&mutation{key: key}); ok {
		return m.value, !m.cleared, true
	}
	if w.inRange(key) {
		return nil, false, true
	}
	return nil, false, false
}

// ascend calls fn for every buffered mutation in [begin, end).
func (w *writeSet) ascend(begin, end []byte, fn func(*mutation) bool) {
	pivot := &mutation{key: begin}
	if end == nil {
		w.muts.AscendGreaterOrEqual(pivot, fn)
		return
	}
	w.muts.AscendRange(pivot, &mutation{key: end}, fn)
}

// inRangeOrder returns the buffered mutations in [begin, end), in the scan's order.
func (w *writeSet) inRangeOrder(begin, end []byte, reverse bool) []*mutation {
	var out []*mutation
	w.ascend(begin, end, func(m *mutation) bool { out = append(out, m); return true })
	if reverse {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

func (w *writeSet) empty() bool {
	return w.muts.Len() == 0 && len(w.ranges) == 0 && len(w.stamped) == 0
}

// fill puts the normalised writes into req.
func (w *writeSet) fill(req *CommitRequest) {
	w.muts.Ascend(func(m *mutation) bool {
		if m.cleared {
			req.Clears = append(req.Clears, m.key)
		} else {
			req.Sets = append(req.Sets, KeyValue{Key: m.key, Value: m.value})
		}
		return true
	})
	req.ClearRanges = w.ranges
	req.Stamped = w.stamped
}
