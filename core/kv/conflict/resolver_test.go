package conflict

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/kv"
)

var t0 = time.Unix(1000, 0)

func k(s string) []byte { return []byte(s) }

func rng(b, e string) kv.KeyRange {
	r := kv.KeyRange{Begin: k(b)}
	if e != "" {
		r.End = k(e)
	}
	return r
}

// commit is one recorded write: a version and what it wrote.
type commit struct {
	v      int64
	keys   []string
	ranges []kv.KeyRange
}

func TestCheck(t *testing.T) {
	history := []commit{
		{v: 10, keys: []string{"a", "m"}},
		{v: 20, keys: []string{"c"}},
		{v: 30, ranges: []kv.KeyRange{rng("p", "r")}},
		{v: 40, keys: []string{"x"}, ranges: []kv.KeyRange{rng("y", "")}},
	}
	rows := []struct {
		name   string
		rv     int64
		keys   []string
		ranges []kv.KeyRange
		want   kv.Code // 0: no conflict
	}{
		{name: "no reads", rv: 0},
		{name: "key written before the read", rv: 20, keys: []string{"a", "c"}},
		{name: "key written after the read", rv: 15, keys: []string{"c"}, want: kv.CodeConflict},
		{name: "key written at the read version", rv: 20, keys: []string{"c"}},
		{name: "key nobody wrote", rv: 0, keys: []string{"b"}},
		{name: "range holding a later write", rv: 15, ranges: []kv.KeyRange{rng("b", "d")}, want: kv.CodeConflict},
		{name: "range ending at a later write", rv: 15, ranges: []kv.KeyRange{rng("b", "c")}},
		{name: "unbounded range past a later write", rv: 35, ranges: []kv.KeyRange{rng("w", "")}, want: kv.CodeConflict},
		{name: "key in a later clear", rv: 25, keys: []string{"q"}, want: kv.CodeConflict},
		{name: "key at a later clear's end", rv: 25, keys: []string{"r"}},
		{name: "range overlapping a later clear", rv: 25, ranges: []kv.KeyRange{rng("o", "pa")}, want: kv.CodeConflict},
		{name: "range beside a later clear", rv: 25, ranges: []kv.KeyRange{rng("n", "p")}},
		{name: "key in a later unbounded clear", rv: 35, keys: []string{"zzz"}, want: kv.CodeConflict},
		{name: "clear before the read", rv: 30, keys: []string{"q"}},
		{name: "read from the future", rv: 50, keys: []string{"a", "x"}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			r := New(time.Hour)
			for _, c := range history {
				r.Record(c.v, bytesOf(c.keys), c.ranges, t0)
			}
			req := &kv.CommitRequest{ReadVersion: row.rv, ReadKeys: bytesOf(row.keys), ReadRanges: row.ranges}
			err := r.Check(req)
			if row.want == 0 && err != nil || row.want != 0 && kv.CodeOf(err) != row.want {
				t.Fatalf("Check = %v, want code %v", err, row.want)
			}
		})
	}
}

func TestHorizon(t *testing.T) {
	r := New(10 * time.Second)
	r.Record(1, bytesOf([]string{"a"}), nil, t0)
	r.Record(2, bytesOf([]string{"b"}), nil, t0.Add(5*time.Second))
	if h := r.Horizon(); h != 0 {
		t.Fatalf("horizon %d before anything expired", h)
	}
	r.Record(3, bytesOf([]string{"c"}), nil, t0.Add(11*time.Second)) // version 1 expires
	if h := r.Horizon(); h != 1 {
		t.Fatalf("horizon %d, want 1", h)
	}
	if err := r.Check(&kv.CommitRequest{ReadVersion: 0, ReadKeys: bytesOf([]string{"z"})}); kv.CodeOf(err) != kv.CodeTooOld {
		t.Fatalf("read at 0 behind horizon 1: %v, want too old", err)
	}
	if err := r.Check(&kv.CommitRequest{ReadVersion: 1, ReadKeys: bytesOf([]string{"b"})}); kv.CodeOf(err) != kv.CodeConflict {
		t.Fatalf("b written at 2 after a read at 1: %v, want conflict", err)
	}
}

// TestAgainstModel: random histories and read sets, with the answer of a
// model that compares every remembered write with every read.
func TestAgainstModel(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	key := func() string { return fmt.Sprintf("k%02d", rnd.IntN(40)) }
	span := func() kv.KeyRange {
		a, b := key(), key()
		if a > b {
			a, b = b, a
		}
		if rnd.IntN(8) == 0 {
			return rng(a, "")
		}
		return rng(a, b)
	}
	for trial := range 2000 {
		r := New(time.Hour)
		var hist []commit
		for v := int64(1); v <= int64(1+rnd.IntN(30)); v++ {
			c := commit{v: v}
			for range rnd.IntN(4) {
				c.keys = append(c.keys, key())
			}
			if rnd.IntN(5) == 0 {
				c.ranges = append(c.ranges, span())
			}
			hist = append(hist, c)
			r.Record(c.v, bytesOf(c.keys), c.ranges, t0)
		}
		req := &kv.CommitRequest{ReadVersion: int64(rnd.IntN(len(hist) + 1))}
		for range rnd.IntN(20) { // past 8 keys, the set path
			req.ReadKeys = append(req.ReadKeys, k(key()))
		}
		for range rnd.IntN(3) {
			req.ReadRanges = append(req.ReadRanges, span())
		}
		want := false
		for _, c := range hist {
			if c.v <= req.ReadVersion {
				continue
			}
			for _, w := range c.keys {
				want = want || keyRead(req, k(w))
			}
			for _, w := range c.ranges {
				want = want || rangeRead(req, w)
			}
		}
		err := r.Check(req)
		if got := err != nil; got != want || err != nil && kv.CodeOf(err) != kv.CodeConflict {
			t.Fatalf("trial %d: Check = %v, model says conflict=%v\nhistory %+v\nrequest %+v", trial, err, want, hist, req)
		}
	}
}

func keyRead(req *kv.CommitRequest, w []byte) bool {
	for _, rk := range req.ReadKeys {
		if string(rk) == string(w) {
			return true
		}
	}
	for _, rr := range req.ReadRanges {
		if rr.Contains(w) {
			return true
		}
	}
	return false
}

func rangeRead(req *kv.CommitRequest, w kv.KeyRange) bool {
	for _, rk := range req.ReadKeys {
		if w.Contains(rk) {
			return true
		}
	}
	for _, rr := range req.ReadRanges {
		if w.Overlaps(rr) {
			return true
		}
	}
	return false
}

func bytesOf(ss []string) [][]byte {
	var out [][]byte
	for _, s := range ss {
		out = append(out, k(s))
	}
	return out
}
