package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/rpc"
)

// feeder drives an aimd with a synthetic clock.
type feeder struct {
	a   *aimd
	now time.Time
}

func newFeeder(cfg WindowConfig) *feeder {
	return &feeder{a: newAIMD(cfg), now: time.Unix(1000, 0)}
}

// ok feeds n answered requests of class c and latency d, with the window
// full (so it may grow), each some time after the previous.
func (f *feeder) ok(n int, c int, d time.Duration) {
	for range n {
		f.now = f.now.Add(d / 4)
		f.a.observe(Sample{At: f.now, Latency: d, Class: c, Outcome: OutcomeOK, InFlight: f.a.size()})
	}
}

func (f *feeder) busy() {
	f.a.observe(Sample{At: f.now, Outcome: OutcomeBusy, InFlight: f.a.size()})
}

func TestWindowGrowsWhileLatencyHolds(t *testing.T) {
	f := newFeeder(WindowConfig{Min: 2, Max: 40, Start: 4})
	if f.a.size() != 4 {
		t.Fatalf("start %d", f.a.size())
	}
	f.ok(10, 0, time.Millisecond)
	mid := f.a.size()
	if mid <= 4 {
		t.Fatalf("window did not grow with steady latency: %d", mid)
	}
	f.ok(500, 0, time.Millisecond)
	if f.a.size() != 40 {
		t.Fatalf("window stopped at %d, ceiling 40", f.a.size())
	}
	if f.a.cuts != 0 {
		t.Fatalf("steady latency cut the window %d times", f.a.cuts)
	}
}

func TestWindowIdleDoesNotGrow(t *testing.T) {
	f := newFeeder(WindowConfig{Min: 4, Start: 8})
	for range 200 {
		f.now = f.now.Add(time.Millisecond)
		f.a.observe(Sample{At: f.now, Latency: time.Millisecond, Outcome: OutcomeOK, InFlight: 1})
	}
	if f.a.size() != 8 {
		t.Fatalf("an application-limited window grew to %d", f.a.size())
	}
}

func TestWindowCutsOnBusyOncePerHold(t *testing.T) {
	f := newFeeder(WindowConfig{Min: 3, Max: 64, Start: 32})
	f.busy()
	if f.a.size() != 16 {
		t.Fatalf("after a busy reply: %d, want 16", f.a.size())
	}
	f.busy() // same instant: replies of requests sent before the cut
	if f.a.size() != 16 {
		t.Fatalf("a burst of busy replies cut more than once: %d", f.a.size())
	}
	for range 10 {
		f.now = f.now.Add(time.Second)
		f.busy()
	}
	if f.a.size() != 3 {
		t.Fatalf("repeated busy replies left the window at %d, floor 3", f.a.size())
	}
	// After a cut the window grows linearly, not by slow start.
	before := f.a.limit
	f.ok(3, 0, time.Millisecond)
	if f.a.limit-before > 1.5 {
		t.Fatalf("grew from %.2f to %.2f in 3 samples after a cut", before, f.a.limit)
	}
}

func TestWindowCutsOnRisingLatency(t *testing.T) {
	f := newFeeder(WindowConfig{Min: 4, Max: 64, Start: 8})
	f.ok(40, 0, 2*time.Millisecond)
	grown := f.a.size()
	if grown <= 8 {
		t.Fatalf("did not grow: %d", grown)
	}
	f.ok(30, 0, 20*time.Millisecond) // queueing: latency ×10
	if f.a.size() >= grown || f.a.cuts == 0 {
		t.Fatalf("latency rose tenfold and the window went %d -> %d (cuts %d)", grown, f.a.size(), f.a.cuts)
	}
	f.ok(200, 0, 20*time.Millisecond)
	if f.a.size() < 4 {
		t.Fatalf("below the floor: %d", f.a.size())
	}
}

func TestWindowJitterUnderSlackIsNotCongestion(t *testing.T) {
	f := newFeeder(WindowConfig{Max: 64, Start: 8})
	for i := range 300 {
		d := 100 * time.Microsecond
		if i%2 == 0 {
			d = 600 * time.Microsecond // 6× the baseline but under the 1 ms slack
		}
		f.ok(1, 0, d)
	}
	if f.a.cuts != 0 {
		t.Fatalf("sub-millisecond jitter cut the window %d times", f.a.cuts)
	}
}

func TestWindowClassesKeepTheirOwnBaseline(t *testing.T) {
	// Large writes are slow and small reads fast, interleaved: neither is
	// congestion.
	f := newFeeder(WindowConfig{Max: 64, Start: 8})
	for range 200 {
		f.ok(1, requestClass(false, 4096), 200*time.Microsecond)
		f.ok(1, requestClass(true, 4<<20), 30*time.Millisecond)
	}
	if f.a.cuts != 0 || f.a.size() != 64 {
		t.Fatalf("mixed classes: cuts %d, size %d", f.a.cuts, f.a.size())
	}
}

func TestWindowBaselineFollowsALastingChange(t *testing.T) {
	f := newFeeder(WindowConfig{Min: 4, Max: 64, Start: 8})
	f.ok(50, 0, time.Millisecond)
	f.ok(3000, 0, 5*time.Millisecond) // e.g. the storage moved to slower disks
	cuts := f.a.cuts
	size := f.a.size()
	f.ok(500, 0, 5*time.Millisecond)
	if f.a.cuts != cuts || f.a.size() <= size && size < 64 {
		t.Fatalf("after a lasting change: cuts %d -> %d, size %d -> %d", cuts, f.a.cuts, size, f.a.size())
	}
}

func TestWindowFixedNeverMoves(t *testing.T) {
	f := newFeeder(WindowConfig{Fixed: true, Start: 8, Min: 1, Max: 100})
	f.ok(100, 0, time.Millisecond)
	f.busy()
	f.ok(100, 0, 50*time.Millisecond)
	if f.a.size() != 8 {
		t.Fatalf("fixed window moved to %d", f.a.size())
	}
}

func TestOutcomeOf(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		err    error
		ctxErr error
		want   Outcome
	}{
		{nil, nil, OutcomeOK},
		{rpc.Errorf(rpc.Unavailable, "down"), nil, OutcomeBusy},
		{rpc.Errorf(rpc.DeadlineExceeded, "slow"), nil, OutcomeBusy},
		{rpc.Errorf(rpc.ResourceExhausted, "full"), nil, OutcomeBusy},
		{rpc.Errorf(storageapi.CodeChannelBusy, "busy"), nil, OutcomeBusy},
		{rpc.Errorf(storageapi.CodeNotCommitted, "mid-update"), nil, OutcomeIgnore},
		{rpc.Errorf(storageapi.CodeChainVersion, "stale"), nil, OutcomeIgnore},
		{rpc.Errorf(rpc.NotFound, "no chunk"), nil, OutcomeIgnore},
		{rpc.Errorf(rpc.Canceled, "gave up"), cancelled.Err(), OutcomeIgnore},
		{rpc.Errorf(rpc.Unavailable, "down"), cancelled.Err(), OutcomeIgnore},
	} {
		if got := outcomeOf(c.err, c.ctxErr); got != c.want {
			t.Errorf("outcomeOf(%v, %v) = %d, want %d", c.err, c.ctxErr, got, c.want)
		}
	}
}

func TestWindowSemaphoreBoundsAndWakes(t *testing.T) {
	w := NewWindow(WindowConfig{Min: 2, Max: 64, Start: 3})
	var cur, peak atomic.Int64
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Acquire(context.Background()); err != nil {
				t.Error(err)
				return
			}
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			cur.Add(-1)
			w.Release()
		}()
	}
	wg.Wait()
	st := w.Stats()
	if peak.Load() > 3 || st.Peak > 3 || st.InFlight != 0 {
		t.Fatalf("peak %d (window says %d), in flight %d: limit 3", peak.Load(), st.Peak, st.InFlight)
	}
	if st.Waits == 0 {
		t.Fatal("40 callers on 3 slots never waited")
	}
}

func TestWindowAcquireGivesUpWithContext(t *testing.T) {
	w := NewWindow(WindowConfig{Fixed: true, Start: 1})
	if err := w.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Acquire(ctx) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire on a full window after cancel: %v", err)
	}
	w.Release()
	// The abandoned wait must not have kept a slot.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := w.Acquire(ctx2); err != nil {
		t.Fatalf("slot lost to a cancelled waiter: %v", err)
	}
	if st := w.Stats(); st.InFlight != 1 {
		t.Fatalf("in flight %d", st.InFlight)
	}
}

func TestWindowGrowthWakesWaiters(t *testing.T) {
	w := NewWindow(WindowConfig{Min: 1, Max: 8, Start: 1})
	if err := w.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	go func() {
		if err := w.Acquire(context.Background()); err == nil {
			close(got)
		}
	}()
	for w.Stats().Waits == 0 {
		time.Sleep(time.Millisecond)
	}
	// Answers at steady latency with the window full grow it to 2, which
	// lets the waiter in while the first slot is still held.
	w.Observe(time.Millisecond, 0, OutcomeOK)
	<-got
	if st := w.Stats(); st.InFlight != 2 || st.Limit < 2 {
		t.Fatalf("after growth: %+v", st)
	}
}

func TestRunBoundedReturnsTheRealError(t *testing.T) {
	w := NewWindow(WindowConfig{Fixed: true, Start: 4})
	boom := errors.New("boom")
	var ran atomic.Int64
	err := runBounded(context.Background(), w, 100, func(ctx context.Context, i int) error {
		ran.Add(1)
		if i == 5 {
			return boom
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
			return nil
		}
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if ran.Load() == 100 {
		t.Log("every task ran before the failure stopped the rest (possible, if slow to cancel)")
	}
	if st := w.Stats(); st.InFlight != 0 || st.Peak > 4 {
		t.Fatalf("window after: %+v", st)
	}
	var sum atomic.Int64
	if err := runBounded(context.Background(), w, 50, func(ctx context.Context, i int) error {
		sum.Add(int64(i))
		return nil
	}); err != nil || sum.Load() != 49*50/2 {
		t.Fatalf("all tasks: %v, sum %d", err, sum.Load())
	}
	if err := runBounded(context.Background(), w, 0, nil); err != nil {
		t.Fatal(err)
	}
}
