package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsRoundTrip(t *testing.T) {
	// Every value must land in a bucket whose range holds it, and the
	// buckets must tile the line in order.
	for _, v := range []uint64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 123456789, 1<<40 - 1} {
		i := bucketOf(v)
		lo, hi := bucketRange(i)
		if v < lo || v >= hi {
			t.Fatalf("value %d in bucket %d = [%d,%d)", v, i, lo, hi)
		}
		if hi-lo > 1 && float64(hi-lo)/float64(lo) > 1.0/64+1e-9 {
			t.Fatalf("bucket %d = [%d,%d) wider than 1/64", i, lo, hi)
		}
	}
	for i := 1; i < histBuckets; i++ {
		_, prevHi := bucketRange(i - 1)
		lo, _ := bucketRange(i)
		if lo != prevHi {
			t.Fatalf("bucket %d starts at %d, previous ends at %d", i, lo, prevHi)
		}
	}
	if bucketOf(math.MaxUint64) != histBuckets-1 {
		t.Fatal("huge values must clamp to the last bucket")
	}
}

func TestQuantilesAgainstSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	var vals []time.Duration
	for i := 0; i < 100_000; i++ {
		// Log-normal-ish latencies from 10 µs to about 100 ms.
		d := time.Duration(10e3 * math.Exp(r.Float64()*9))
		vals = append(vals, d)
		h.Record(d)
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		want := vals[int(math.Ceil(q*float64(len(vals))))-1]
		got := h.Quantile(q)
		if rel := math.Abs(float64(got-want)) / float64(want); rel > 0.02 {
			t.Errorf("p%v = %v, exact %v (off by %.2f%%)", q*100, got, want, rel*100)
		}
	}
	if h.Min() != vals[0] || h.Max() != vals[len(vals)-1] {
		t.Errorf("min/max %v/%v, want %v/%v", h.Min(), h.Max(), vals[0], vals[len(vals)-1])
	}
	if h.Count() != uint64(len(vals)) {
		t.Errorf("count %d", h.Count())
	}
}

func TestQuantileSmallAndEdge(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Mean() != 0 {
		t.Fatal("empty histogram must report zeros")
	}
	for _, v := range []time.Duration{5, 10, 20, 40, 80} {
		h.Record(v)
	}
	// Below 128 ns buckets are exact.
	if got := h.Quantile(0.5); got != 20 {
		t.Errorf("p50 = %v, want 20ns", got)
	}
	if got := h.Quantile(1); got != 80 {
		t.Errorf("p100 = %v, want 80ns", got)
	}
	if got := h.Quantile(0); got != 5 {
		t.Errorf("p0 = %v, want 5ns", got)
	}
	if got := h.Mean(); got != 31 {
		t.Errorf("mean = %v, want 31ns", got)
	}
	h.Record(-time.Second)
	if h.Min() != 0 {
		t.Errorf("negative durations count as zero, min = %v", h.Min())
	}
}

func TestMerge(t *testing.T) {
	var a, b, all Histogram
	for i := 1; i <= 1000; i++ {
		d := time.Duration(i) * time.Microsecond
		all.Record(d)
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	var m Histogram
	m.Merge(&a)
	m.Merge(&Histogram{})
	m.Merge(&b)
	if m != all {
		t.Fatal("merging the halves differs from recording all")
	}
	if got := m.Quantile(0.99); got < 980*time.Microsecond || got > 1000*time.Microsecond {
		t.Errorf("p99 of 1..1000 µs = %v", got)
	}
}
