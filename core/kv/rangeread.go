package kv

import (
	"bytes"
	"context"
)

// mergeRange reads r from the snapshot as the transaction sees it: engine
// entries overlaid with the buffered writes (sets added, clears and clear ranges
// removed), in scan order, up to opts.Limit entries.
func mergeRange(ctx context.Context, s Snapshot, ws *writeSet, r KeyRange, opts RangeOptions) (RangeResult, error) {
	base := &baseIter{s: s, lo: r.Begin, hi: r.End, reverse: opts.Reverse}
	// Fetch pages a little larger than the limit: buffered clears may hide some.
	base.page = 256
	if opts.Limit > 0 && opts.Limit+16 < base.page {
		base.page = opts.Limit + 16
	}
	buf := ws.inRangeOrder(r.Begin, r.End, opts.Reverse)
	before := func(a, b []byte) bool { // a comes first in scan order
		if opts.Reverse {
			return bytes.Compare(a, b) > 0
		}
		return bytes.Compare(a, b) < 0
	}
	var out []KeyValue
	bi := 0
	for {
		kv, ok, err := base.peek(ctx)
		if err != nil {
			return RangeResult{}, err
		}
		var next KeyValue
		switch {
		case bi < len(buf) && (!ok || !before(kv.Key, buf[bi].key)):
			m := buf[bi]
			bi++
			if ok && bytes.Equal(kv.Key, m.key) {
				base.advance() // the buffered write shadows the engine's entry
			}
			if m.cleared {
				continue
			}
			next = KeyValue{Key: m.key, Value: m.value}
		case ok:
			base.advance()
			if ws.inRange(kv.Key) {
				continue
			}
			next = kv
		default:
			return RangeResult{KVs: out}, nil
		}
		if opts.Limit > 0 && len(out) == opts.Limit {
			return RangeResult{KVs: out, More: true}, nil // next exists: there is more
		}
		out = append(out, next)
	}
}

// baseIter walks the engine's entries of [lo, hi) page by page.
type baseIter struct {
	s       Snapshot
	lo, hi  []byte
	reverse bool
	page    int

	buf     []KeyValue
	i       int
	more    bool
	started bool
}

func (it *baseIter) peek(ctx context.Context) (KeyValue, bool, error) {
	for it.i >= len(it.buf) {
		if it.started && !it.more {
			return KeyValue{}, false, nil
		}
		if it.started { // continue after the last entry of the previous page
			last := it.buf[len(it.buf)-1].Key
			if it.reverse {
				it.hi = last
			} else {
				it.lo = KeyAfter(last)
			}
		}
		kvs, more, err := it.s.Scan(ctx, it.lo, it.hi, it.page, it.reverse)
		if err != nil {
			return KeyValue{}, false, err
		}
		it.buf, it.i, it.more, it.started = kvs, 0, more, true
		if len(kvs) == 0 {
			it.more = false
		}
	}
	return it.buf[it.i], true, nil
}

func (it *baseIter) advance() { it.i++ }
