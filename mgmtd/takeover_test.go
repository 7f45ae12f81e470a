package mgmtd

import (
	"testing"
	"time"
)

// Each row is a sequence of lease rounds by a standby; the verdict of the
// last one is checked.
func TestExpiredWatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rec := func(term uint64, expiry int64) leaseRecord { return leaseRecord{Term: term, Expiry: expiry} }
	const wait = 500 * time.Millisecond
	type round struct {
		failed bool
		cur    leaseRecord
		at     time.Duration // after t0
	}
	for _, tc := range []struct {
		name   string
		rounds []round
		want   bool
	}{
		{"first sight of an expired lease: wait", []round{{cur: rec(1, 10), at: 0}}, false},
		{"the same expired record for the whole wait: take it", []round{{cur: rec(1, 10)}, {cur: rec(1, 10), at: 200 * time.Millisecond}, {cur: rec(1, 10), at: wait}}, true},
		{"a failed round in between: the wait starts over", []round{{cur: rec(1, 10)}, {failed: true, at: 300 * time.Millisecond}, {cur: rec(1, 10), at: wait}}, false},
		{"renewed in the same term meanwhile: another record", []round{{cur: rec(1, 10)}, {cur: rec(1, 20), at: wait}}, false},
		{"a new term meanwhile: another record", []round{{cur: rec(1, 10)}, {cur: rec(2, 10), at: wait}}, false},
		{"the wait counts from the first sight of the new record", []round{{cur: rec(1, 10)}, {cur: rec(1, 20), at: 400 * time.Millisecond}, {cur: rec(1, 20), at: 400*time.Millisecond + wait}}, true},
	} {
		var w expiredWatch
		got := false
		for _, r := range tc.rounds {
			if r.failed {
				w.failed()
				got = false
				continue
			}
			got = w.observe(r.cur, t0.Add(r.at), wait)
		}
		if got != tc.want {
			t.Errorf("%s: take over %v, want %v", tc.name, got, tc.want)
		}
	}
}
