package storageapi

import "time"

// Latencies of the client I/O a storage node served, as counts per bucket
// since it started (StatsResp.ReadLatency, WriteLatency): bucket i counts
// operations that took at most LatencyBound(i), the last one everything
// slower. Fixed bounds, doubling from 16 µs, make counts of two fetches
// subtract into the histogram of the time between them, and histograms of
// several nodes add.
const LatencySlots = 21

// latencyFirst is the first bucket's bound.
const latencyFirst = 16 * time.Microsecond

// LatencyBound is the upper bound of bucket i (i < LatencySlots-1): 16 µs,
// 32 µs, … 8.4 s.
func LatencyBound(i int) time.Duration { return latencyFirst << i }

// LatencySlot is the bucket a duration falls in.
func LatencySlot(d time.Duration) int {
	for i := range LatencySlots - 1 {
		if d <= LatencyBound(i) {
			return i
		}
	}
	return LatencySlots - 1
}

// LatencyQuantile is an upper bound of the q-quantile (0 < q ≤ 1) of a
// histogram: the bound of the bucket the q-th operation falls in, so the
// true quantile is at most that and above the bucket below's. ok is false
// for an empty histogram; a quantile in the last bucket answers its lower
// bound with over set (slower than every bound).
func LatencyQuantile(counts []uint64, q float64) (d time.Duration, over, ok bool) {
	var total uint64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return 0, false, false
	}
	rank := uint64(q * float64(total))
	if float64(rank) < q*float64(total) || rank == 0 {
		rank++ // the ceiling, and at least the first operation
	}
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			if i >= LatencySlots-1 {
				return LatencyBound(LatencySlots - 2), true, true
			}
			return LatencyBound(i), false, true
		}
	}
	return LatencyBound(LatencySlots - 2), true, true
}
