package bench

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records latencies in log-linear buckets: exact below 128 ns, then
// 64 buckets per power of two, so any quantile is within 1/64 (1.6%) of the
// true value while a histogram stays a fixed 18 KiB. Not safe for concurrent
// use: the runner gives each worker its own and merges them.
type Histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      float64
	min, max uint64
}

const (
	subBits     = 6 // 64 sub-buckets per power of two
	linearMax   = 1 << (subBits + 1)
	maxExp      = 40 // 2^40 ns is about 18 minutes; longer is clamped
	histBuckets = linearMax + (maxExp-subBits-1)*(1<<subBits)
)

// bucketOf maps a value in ns to its bucket index.
func bucketOf(v uint64) int {
	if v < linearMax {
		return int(v)
	}
	e := bits.Len64(v)
	if e > maxExp {
		return histBuckets - 1
	}
	shift := e - subBits - 1
	sub := v >> shift // in [64, 128)
	return linearMax + (shift-1)*(1<<subBits) + int(sub) - (1 << subBits)
}

// bucketRange is the range [lo, hi) of values that land in bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < linearMax {
		return uint64(i), uint64(i) + 1
	}
	j := i - linearMax
	shift := j/(1<<subBits) + 1
	sub := uint64(j%(1<<subBits)) + (1 << subBits)
	return sub << shift, (sub + 1) << shift
}

// Record adds one latency; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(0)
	if d > 0 {
		v = uint64(d)
	}
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// Merge adds o's records to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of records.
func (h *Histogram) Count() uint64 { return h.n }

// Mean is the average latency (0 when empty).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Max is the largest latency recorded.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Min is the smallest latency recorded.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Quantile returns the latency below which a fraction q (0..1) of the
// records fall: the nearest-rank record's bucket midpoint, kept within the
// observed min and max.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 || math.IsNaN(q) {
		return 0
	}
	q = math.Max(0, math.Min(1, q))
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		if seen >= rank {
			lo, hi := bucketRange(i)
			v := lo + (hi-lo-1)/2
			v = max(h.min, min(h.max, v))
			return time.Duration(v)
		}
	}
	return time.Duration(h.max)
}
