package client

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestHedgeThresholdFollowsLatency(t *testing.T) {
	h := newHedger(HedgeConfig{Floor: 2 * time.Millisecond, Cap: 100 * time.Millisecond})
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		lat  func(i int) time.Duration
		want time.Duration
	}{
		{"fast reads: the floor", func(int) time.Duration { return 200 * time.Microsecond }, 2 * ms},
		{"steady 20 ms", func(int) time.Duration { return 20 * ms }, 20 * ms},
		{"a tail: p95", func(i int) time.Duration {
			if i%20 == 0 {
				return 15 * ms
			}
			return 5 * ms
		}, 15 * ms},
		{"a third slow: held to 4× the median", func(i int) time.Duration {
			if i%3 == 0 {
				return 90 * ms
			}
			return 3 * ms
		}, 12 * ms},
		{"everything slow: the cap", func(int) time.Duration { return time.Second }, 100 * ms},
	} {
		lat := make([]time.Duration, latRingSize)
		for i := range lat {
			lat[i] = c.lat(i)
		}
		if got := h.compute(lat); got != c.want {
			t.Errorf("%s: threshold %v, want %v", c.name, got, c.want)
		}
	}
	// Recording updates the class's threshold; other classes keep theirs.
	for range 2 * hedgeRefresh {
		h.record(1, 30*ms)
	}
	if got := h.threshold(1); got != 30*ms {
		t.Fatalf("class 1 threshold %v after 30 ms reads", got)
	}
	if got := h.threshold(0); got != 10*ms {
		t.Fatalf("class 0 threshold %v before any read, want the 10 ms default", got)
	}
}

// blocked answers only when its context ends, and says so.
func blocked(cancelled chan<- struct{}) func(context.Context) ([]ReadResult, error) {
	return func(ctx context.Context) ([]ReadResult, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}
}

func answer(s string) func(context.Context) ([]ReadResult, error) {
	return func(context.Context) ([]ReadResult, error) { return []ReadResult{{Data: []byte(s)}}, nil }
}

func TestHedgeRaceSlowPrimary(t *testing.T) {
	h := newHedger(HedgeConfig{Floor: time.Millisecond, Cap: time.Millisecond})
	cancelled := make(chan struct{})
	res, err := h.race(context.Background(), 0, blocked(cancelled), answer("backup"))
	if err != nil || string(res[0].Data) != "backup" {
		t.Fatalf("race: %v %v", res, err)
	}
	<-cancelled // the loser is cancelled
	if h.hedges.Load() != 1 || h.wins.Load() != 1 {
		t.Fatalf("hedges %d wins %d", h.hedges.Load(), h.wins.Load())
	}
}

func TestHedgeRaceFastPrimaryDoesNotHedge(t *testing.T) {
	h := newHedger(HedgeConfig{Floor: time.Hour, Cap: time.Hour})
	backupRan := false
	res, err := h.race(context.Background(), 0, answer("primary"), func(context.Context) ([]ReadResult, error) {
		backupRan = true
		return nil, nil
	})
	if err != nil || string(res[0].Data) != "primary" || backupRan || h.hedges.Load() != 0 {
		t.Fatalf("race: %v %v, backup ran %v, hedges %d", res, err, backupRan, h.hedges.Load())
	}
}

func TestHedgeRaceFailedSideWaitsForTheOther(t *testing.T) {
	h := newHedger(HedgeConfig{Floor: time.Millisecond, Cap: time.Millisecond})
	// The primary fails after the hedge went out: the backup's answer wins.
	release := make(chan struct{})
	primary := func(ctx context.Context) ([]ReadResult, error) {
		<-release
		return nil, errors.New("replica broke")
	}
	backup := func(ctx context.Context) ([]ReadResult, error) {
		close(release)
		time.Sleep(time.Millisecond)
		return []ReadResult{{Data: []byte("backup")}}, nil
	}
	res, err := h.race(context.Background(), 0, primary, backup)
	if err != nil || string(res[0].Data) != "backup" {
		t.Fatalf("race: %v %v", res, err)
	}
	// Both fail: the error comes back.
	boom := errors.New("boom")
	fail := func(context.Context) ([]ReadResult, error) { time.Sleep(2 * time.Millisecond); return nil, boom }
	if _, err := h.race(context.Background(), 0, fail, fail); !errors.Is(err, boom) {
		t.Fatalf("both failed: %v", err)
	}
	// A fast failure with no hedge out returns at once (the retry loop
	// picks another replica).
	h2 := newHedger(HedgeConfig{Floor: time.Hour, Cap: time.Hour})
	if _, err := h2.race(context.Background(), 0, func(context.Context) ([]ReadResult, error) { return nil, boom }, answer("x")); !errors.Is(err, boom) {
		t.Fatalf("fast failure: %v", err)
	}
}

func TestHedgeBudget(t *testing.T) {
	h := newHedger(HedgeConfig{Floor: time.Millisecond, Cap: time.Millisecond, Budget: 0.01})
	slow := func(ctx context.Context) ([]ReadResult, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(3 * time.Millisecond):
			return []ReadResult{{Data: []byte("primary")}}, nil
		}
	}
	for range 100 {
		if _, err := h.race(context.Background(), 0, slow, answer("backup")); err != nil {
			t.Fatal(err)
		}
	}
	// A burst of hedgeBurst, then about one per hundred reads.
	if n := h.hedges.Load(); n > hedgeBurst+2 {
		t.Fatalf("%d hedges for 100 reads with a 1%% budget", n)
	}
	off := newHedger(HedgeConfig{Off: true, Floor: time.Millisecond, Cap: time.Millisecond})
	if _, err := off.race(context.Background(), 0, slow, answer("backup")); err != nil || off.hedges.Load() != 0 {
		t.Fatalf("hedging off: %v, hedges %d", err, off.hedges.Load())
	}
}

func TestHedgeRaceCallerCancels(t *testing.T) {
	h := newHedger(HedgeConfig{Floor: time.Hour, Cap: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan struct{})
	go func() { time.Sleep(time.Millisecond); cancel() }()
	if _, err := h.race(ctx, 0, blocked(cancelled), answer("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled race: %v", err)
	}
	<-cancelled
}
