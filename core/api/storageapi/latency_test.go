package storageapi

import (
	"testing"
	"time"
)

func TestLatencySlot(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		slot int
	}{
		{0, 0}, {16 * time.Microsecond, 0}, {17 * time.Microsecond, 1}, {32 * time.Microsecond, 1},
		{time.Millisecond, 6}, // 1,024 µs bounds slot 6
		{LatencyBound(LatencySlots - 2), LatencySlots - 2}, {time.Minute, LatencySlots - 1},
	} {
		if got := LatencySlot(c.d); got != c.slot {
			t.Errorf("LatencySlot(%v) = %d, want %d", c.d, got, c.slot)
		}
	}
	if LatencyBound(LatencySlots-2) < 8*time.Second {
		t.Errorf("the last bound is %v", LatencyBound(LatencySlots-2))
	}
}

func TestLatencyQuantile(t *testing.T) {
	h := make([]uint64, LatencySlots)
	if _, _, ok := LatencyQuantile(h, 0.5); ok {
		t.Fatal("a quantile of nothing")
	}
	h[2], h[5] = 98, 2 // 98 ops ≤ 64 µs, 2 ops ≤ 512 µs
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 64 * time.Microsecond}, {0.98, 64 * time.Microsecond}, {0.99, 512 * time.Microsecond}, {1, 512 * time.Microsecond},
	} {
		d, over, ok := LatencyQuantile(h, c.q)
		if !ok || over || d != c.want {
			t.Errorf("q %v: %v over %v ok %v, want %v", c.q, d, over, ok, c.want)
		}
	}
	h[LatencySlots-1] = 100 // as many slower than every bound
	if d, over, ok := LatencyQuantile(h, 0.99); !ok || !over || d != LatencyBound(LatencySlots-2) {
		t.Errorf("p99 in the last bucket: %v over %v", d, over)
	}
}
