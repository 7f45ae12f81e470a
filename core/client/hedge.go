package client

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flyfs/flyfs/core/rpc"
)

// Hedged reads: when the replica a read went to has not answered after a
// threshold learnt from recent reads, the same read goes to another serving
// replica and the first answer wins; the loser is cancelled. Only reads are
// hedged: a write goes to the chain's head and nowhere else.

// HedgeConfig tunes hedging. Zero fields take defaults.
type HedgeConfig struct {
	Off bool // never hedge
	// The threshold is a high percentile of recent read latency (per size
	// class), at least Floor and at most Cap (defaults 2 ms and 100 ms).
	Floor, Cap time.Duration
	// Percentile of recent latency to wait for (default 0.95). It is also
	// held to at most 4× the median, so that a replica that answers every
	// read slowly cannot drag the threshold up to its own latency.
	Percentile float64
	// Budget is the largest share of reads that may be hedged (default 0.1,
	// with bursts of up to 32 hedges). Under CPU or disk contention every
	// replica's tail is long and hedges only add load; the budget bounds it.
	Budget float64
}

func (c HedgeConfig) withDefaults() HedgeConfig {
	if c.Floor <= 0 {
		c.Floor = 2 * time.Millisecond
	}
	if c.Cap <= 0 {
		c.Cap = 100 * time.Millisecond
	}
	if c.Cap < c.Floor {
		c.Cap = c.Floor
	}
	if c.Percentile <= 0 || c.Percentile >= 1 {
		c.Percentile = 0.95
	}
	if c.Budget <= 0 {
		c.Budget = 0.1
	}
	return c
}

const (
	latRingSize  = 128
	hedgeRefresh = 16 // recompute a class's threshold every this many samples
	hedgeBurst   = 32
)

// latRing holds a class's recent read latencies and its current threshold.
type latRing struct {
	buf       [latRingSize]time.Duration
	n, next   int
	sinceCalc int
	threshold time.Duration
}

// hedger learns read latency and decides when to hedge.
type hedger struct {
	cfg    HedgeConfig
	mu     sync.Mutex
	rings  [numSizeClasses]latRing
	tokens float64

	hedges atomic.Uint64 // hedge requests sent
	wins   atomic.Uint64 // reads the hedge answered first
}

func newHedger(cfg HedgeConfig) *hedger {
	cfg = cfg.withDefaults()
	h := &hedger{cfg: cfg, tokens: hedgeBurst}
	for i := range h.rings {
		// Until reads have been seen, wait a moderate time.
		h.rings[i].threshold = min(max(10*time.Millisecond, cfg.Floor), cfg.Cap)
	}
	return h
}

// record notes the latency of a read's answer (the one that won, measured
// from when it was sent).
func (h *hedger) record(sizeClass int, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := &h.rings[sizeClass%numSizeClasses]
	r.buf[r.next] = d
	r.next = (r.next + 1) % latRingSize
	r.n = min(r.n+1, latRingSize)
	r.sinceCalc++
	if r.sinceCalc >= hedgeRefresh {
		r.sinceCalc = 0
		r.threshold = h.compute(r.buf[:r.n])
	}
}

// compute is the threshold for a set of latencies.
func (h *hedger) compute(lat []time.Duration) time.Duration {
	s := slices.Clone(lat)
	slices.Sort(s)
	p := s[min(int(float64(len(s))*h.cfg.Percentile), len(s)-1)]
	med := s[len(s)/2]
	t := min(p, 4*med)
	return min(max(t, h.cfg.Floor), h.cfg.Cap)
}

// threshold is how long a read of the class waits before hedging.
func (h *hedger) threshold(sizeClass int) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rings[sizeClass%numSizeClasses].threshold
}

// earn credits the budget for a read; spend takes a hedge from it.
func (h *hedger) earn() {
	h.mu.Lock()
	h.tokens = min(h.tokens+h.cfg.Budget, hedgeBurst)
	h.mu.Unlock()
}

func (h *hedger) spend() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tokens < 1 {
		return false
	}
	h.tokens--
	return true
}

// readAnswer is one read request's outcome.
type readAnswer struct {
	results []ReadResult
	err     error
	took    time.Duration
	hedge   bool
}

// race runs primary; if it has not answered after the class's threshold and
// backup is not nil, it runs backup too, and returns the first answer without
// a request-level error (or the last error if both fail). The loser is
// cancelled.
func (h *hedger) race(ctx context.Context, sizeClass int, primary, backup func(context.Context) ([]ReadResult, error)) ([]ReadResult, error) {
	if h == nil || h.cfg.Off || backup == nil {
		start := time.Now()
		res, err := primary(ctx)
		if err == nil && h != nil {
			h.record(sizeClass, time.Since(start))
		}
		return res, err
	}
	h.earn()
	// The loser runs on after the race returns: neither may answer into
	// the caller's memory.
	ctx = rpc.WithoutReplyInto(ctx)
	answers := make(chan readAnswer, 2)
	run := func(ctx context.Context, fn func(context.Context) ([]ReadResult, error), hedge bool) {
		start := time.Now()
		res, err := fn(ctx)
		answers <- readAnswer{results: res, err: err, took: time.Since(start), hedge: hedge}
	}
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	go run(pctx, primary, false)
	timer := time.NewTimer(h.threshold(sizeClass))
	defer timer.Stop()
	pending, hedged := 1, false
	var last readAnswer
	for {
		select {
		case a := <-answers:
			pending--
			if a.err == nil {
				h.record(sizeClass, a.took)
				if a.hedge {
					h.wins.Add(1)
				}
				return a.results, nil // the deferred cancels stop the loser
			}
			last = a
			if pending == 0 {
				return nil, last.err
			}
		case <-timer.C:
			if !hedged && h.spend() {
				hedged = true
				pending++
				h.hedges.Add(1)
				go run(bctx, backup, true)
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
