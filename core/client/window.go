package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/rpc"
)

// The in-flight window bounds how many chunk requests one client has out at
// once. It is shared by every file of an FS, so a process with many writers
// backs off as one: a burst of checkpoint writes from many clients settles at
// what the storage services can take instead of collapsing into timeouts and
// retries. It adapts AIMD-style: it grows while latency holds near its
// baseline, and is cut on busy replies, timeouts, or latency rising well above
// the baseline.

// WindowConfig bounds and tunes a Window. Zero fields take defaults.
type WindowConfig struct {
	// Min is the floor (default 16: as many as a typical reader pool, so
	// independent small reads never queue behind each other for slots).
	Min   int
	Max   int // ceiling (default 64)
	Start int // initial size (default 16)
	// Tolerance: a class of requests whose smoothed latency exceeds
	// Tolerance × its baseline (and the baseline by more than Slack) is
	// congested (default 2.5, Slack 5 ms: CPU scheduling jitter on a busy
	// machine is several milliseconds and is not congestion).
	Tolerance float64
	Slack     time.Duration
	// Fixed makes the window a plain semaphore of Start slots.
	Fixed bool
}

func (c WindowConfig) withDefaults() WindowConfig {
	if c.Fixed {
		if c.Start <= 0 {
			c.Start = 8
		}
		c.Min, c.Max = c.Start, c.Start
	}
	if c.Min <= 0 {
		c.Min = 16
	}
	if c.Max <= 0 {
		c.Max = 64
	}
	if c.Max < c.Min {
		c.Max = c.Min
	}
	if c.Start <= 0 {
		c.Start = 16
	}
	c.Start = min(max(c.Start, c.Min), c.Max)
	if c.Tolerance <= 1 {
		c.Tolerance = 2.5
	}
	if c.Slack <= 0 {
		c.Slack = 5 * time.Millisecond
	}
	return c
}

// Outcome is how a finished request bears on congestion.
type Outcome uint8

const (
	// OutcomeOK: answered; its latency says how loaded the path is.
	OutcomeOK Outcome = iota
	// OutcomeBusy: overloaded, timed out or unreachable: back off.
	OutcomeBusy
	// OutcomeIgnore: an error that says nothing about load (a missing chunk,
	// stale routing, a chunk mid-update, the caller giving up).
	OutcomeIgnore
)

// Request classes: latency is only comparable between requests of one kind
// and size, so each class keeps its own baseline.
const (
	numSizeClasses = 4
	numClasses     = 2 * numSizeClasses
)

// requestClass buckets a request by direction and size.
func requestClass(write bool, bytes int) int {
	c := 0
	switch {
	case bytes <= 16<<10:
		c = 0
	case bytes <= 128<<10:
		c = 1
	case bytes <= 1<<20:
		c = 2
	default:
		c = 3
	}
	if write {
		c += numSizeClasses
	}
	return c
}

// Sample is one finished request fed to the window's state machine.
type Sample struct {
	At       time.Time
	Latency  time.Duration
	Class    int // requestClass
	Outcome  Outcome
	InFlight int // window slots in use when it finished
}

// classLatency tracks one class: a baseline that follows drops quickly and
// rises only slowly (so it stays near the unloaded latency, yet accepts a
// lasting change), and a short-term average.
type classLatency struct {
	base, avg float64 // nanoseconds
	n         int
}

// aimd is the window's pure state machine: samples in, a limit out. It keeps
// no clock of its own (time comes with the samples), so tests drive it.
type aimd struct {
	cfg      WindowConfig
	limit    float64
	ssthresh float64 // below it the window grows by one per sample (slow start)
	classes  [numClasses]classLatency
	lastCut  time.Time
	grows    uint64
	cuts     uint64
}

func newAIMD(cfg WindowConfig) *aimd {
	cfg = cfg.withDefaults()
	return &aimd{cfg: cfg, limit: float64(cfg.Start), ssthresh: float64(cfg.Max)}
}

// warmup is how many samples a class needs before its latency can cut.
const warmup = 8

// observe feeds one sample.
func (a *aimd) observe(s Sample) {
	if a.cfg.Fixed || s.Outcome == OutcomeIgnore {
		return
	}
	if s.Class < 0 || s.Class >= numClasses {
		s.Class = 0
	}
	if s.Outcome == OutcomeBusy {
		a.cut(s.At, 0.5, 0)
		return
	}
	c := &a.classes[s.Class]
	lat := float64(s.Latency)
	if c.n == 0 {
		c.base, c.avg = lat, lat
	} else {
		c.avg += (lat - c.avg) / 8
		if lat < c.base {
			c.base += (lat - c.base) / 4
		} else {
			c.base += (lat - c.base) / 512
		}
	}
	c.n++
	if c.n >= warmup && c.avg > a.cfg.Tolerance*c.base && c.avg-c.base > float64(a.cfg.Slack) {
		a.cut(s.At, 0.8, time.Duration(c.avg))
		return
	}
	// Grow only a window that is in use: an idle client's window must not
	// creep up to the ceiling and then release a burst.
	if float64(s.InFlight) < a.limit/2 {
		return
	}
	before := int(a.limit)
	if a.limit < a.ssthresh {
		a.limit++
	} else {
		a.limit += 1 / a.limit
	}
	a.limit = min(a.limit, float64(a.cfg.Max))
	if int(a.limit) > before {
		a.grows++
	}
}

// cut shrinks the window by factor, at most once per hold (the replies of
// requests sent before a cut still report the old congestion).
func (a *aimd) cut(at time.Time, factor float64, hold time.Duration) {
	hold = max(hold, 2*time.Millisecond)
	if !a.lastCut.IsZero() && at.Sub(a.lastCut) < hold {
		return
	}
	a.lastCut = at
	before := int(a.limit)
	a.limit = max(a.limit*factor, float64(a.cfg.Min))
	a.ssthresh = max(a.limit, float64(a.cfg.Min))
	if int(a.limit) < before {
		a.cuts++
	}
}

// size is the current number of slots.
func (a *aimd) size() int { return int(a.limit) }

// Window is a semaphore whose size an aimd sets.
type Window struct {
	mu       sync.Mutex
	a        *aimd
	inflight int
	peak     int
	waiting  []chan struct{}
	waits    uint64
}

// NewWindow returns a window (see WindowConfig for defaults).
func NewWindow(cfg WindowConfig) *Window { return &Window{a: newAIMD(cfg)} }

// Acquire takes a slot, waiting while the window is full or until ctx ends.
func (w *Window) Acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	if w.inflight < w.a.size() && len(w.waiting) == 0 {
		w.take()
		w.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	w.waiting = append(w.waiting, ch)
	w.waits++
	w.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		w.mu.Lock()
		defer w.mu.Unlock()
		for i, c := range w.waiting {
			if c == ch {
				w.waiting = append(w.waiting[:i], w.waiting[i+1:]...)
				return ctx.Err()
			}
		}
		// Granted while we gave up: hand the slot on.
		w.inflight--
		w.wake()
		return ctx.Err()
	}
}

func (w *Window) take() {
	w.inflight++
	w.peak = max(w.peak, w.inflight)
}

// Release returns a slot.
func (w *Window) Release() {
	w.mu.Lock()
	w.inflight--
	w.wake()
	w.mu.Unlock()
}

// wake grants slots to waiters in arrival order while the window has room.
func (w *Window) wake() {
	for len(w.waiting) > 0 && w.inflight < w.a.size() {
		ch := w.waiting[0]
		w.waiting = w.waiting[1:]
		w.take()
		close(ch)
	}
}

// Observe feeds a finished request's latency and outcome.
func (w *Window) Observe(latency time.Duration, class int, o Outcome) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.a.observe(Sample{At: time.Now(), Latency: latency, Class: class, Outcome: o, InFlight: w.inflight})
	w.wake() // it may have grown
	w.mu.Unlock()
}

// WindowStats describes a window.
type WindowStats struct {
	Limit    int    // slots now
	InFlight int    // slots taken
	Peak     int    // most slots ever taken at once
	Grows    uint64 // times the limit went up
	Cuts     uint64 // times it went down
	Waits    uint64 // acquires that had to wait
}

// Stats returns the window's state.
func (w *Window) Stats() WindowStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return WindowStats{Limit: w.a.size(), InFlight: w.inflight, Peak: w.peak, Grows: w.a.grows, Cuts: w.a.cuts, Waits: w.waits}
}

// outcomeOf classifies a request's error for the window. ctxErr is the
// request's own context's error: a request its caller cancelled (a hedge's
// loser, a failed sibling) says nothing about load.
func outcomeOf(err error, ctxErr error) Outcome {
	if err == nil {
		return OutcomeOK
	}
	if ctxErr != nil {
		return OutcomeIgnore
	}
	switch rpc.CodeOf(err) {
	case rpc.Unavailable, rpc.DeadlineExceeded, rpc.ResourceExhausted, storageapi.CodeChannelBusy:
		return OutcomeBusy
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return OutcomeBusy
	}
	return OutcomeIgnore
}

// runBounded runs fn(0..n-1) concurrently, each holding a window slot, and
// returns the first real error (a failure cancels the rest; their
// cancellation errors are not what the caller wants to see). One task runs
// inline, without a goroutine.
func runBounded(ctx context.Context, w *Window, n int, fn func(ctx context.Context, i int) error) error {
	if n == 1 {
		if err := w.Acquire(ctx); err != nil {
			return err
		}
		defer w.Release()
		return fn(ctx, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, n)
	started := 0
	var acquireErr error
	for i := 0; i < n; i++ {
		if err := w.Acquire(ctx); err != nil {
			acquireErr = err
			break
		}
		started++
		go func(i int) {
			err := fn(ctx, i)
			if err != nil {
				cancel()
			}
			w.Release() // before the caller can see the result
			errs <- err
		}(i)
	}
	var first, firstCancel error
	for range started {
		err := <-errs
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled):
			if firstCancel == nil {
				firstCancel = err
			}
		case first == nil:
			first = err
		}
	}
	if first != nil {
		return first
	}
	if firstCancel != nil {
		return firstCancel
	}
	return acquireErr
}
