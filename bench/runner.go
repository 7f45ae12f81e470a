package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Op runs operation i of a phase on worker w and returns the bytes it moved.
type Op func(ctx context.Context, w int, i int64) (bytes int64, err error)

// Phase is one measured workload.
type Phase struct {
	Name string
	Unit string
	// Workers run ops concurrently.
	Workers int
	// Count is the number of ops; when it is 0 the phase runs for Duration.
	Count    int64
	Duration time.Duration
	// Partition gives worker w the ops [w*Count/W, (w+1)*Count/W) in order
	// (sequential files); otherwise workers take the next op as they free up.
	Partition bool
	Op        Op
	// Progress receives a progress bar (nil: none).
	Progress io.Writer
}

// Run runs a phase to its end, or to its first failed op, which ends it and
// is returned.
func Run(ctx context.Context, p Phase) (Result, error) {
	res := Result{Name: p.Name, Unit: p.Unit, Workers: p.Workers}
	switch {
	case p.Workers < 1:
		return res, fmt.Errorf("%s: need at least one worker, got %d", p.Name, p.Workers)
	case p.Count < 0:
		return res, fmt.Errorf("%s: negative op count %d", p.Name, p.Count)
	case p.Count == 0 && p.Duration <= 0:
		return res, fmt.Errorf("%s: give an op count or a duration", p.Name)
	case p.Op == nil:
		return res, fmt.Errorf("%s: no op", p.Name)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next, done, bytes atomic.Int64
		firstErr          error
		errOnce           sync.Once
		wg                sync.WaitGroup
	)
	hists := make([]Histogram, p.Workers)
	fail := func(i int64, err error) {
		errOnce.Do(func() {
			firstErr = fmt.Errorf("%s: op %d: %w", p.Name, i, err)
			cancel()
		})
	}
	one := func(w int, i int64) bool {
		t0 := time.Now()
		n, err := p.Op(ctx, w, i)
		hists[w].Record(time.Since(t0))
		if err != nil {
			fail(i, err)
			return false
		}
		bytes.Add(n)
		done.Add(1)
		return true
	}
	var deadline time.Time
	start := time.Now()
	if p.Count == 0 {
		deadline = start.Add(p.Duration)
	}
	bar := startBar(p, &done, start)
	for w := 0; w < p.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch {
			case p.Count == 0:
				for ctx.Err() == nil && time.Now().Before(deadline) {
					if !one(w, next.Add(1)-1) {
						return
					}
				}
			case p.Partition:
				lo, hi := int64(w)*p.Count/int64(p.Workers), int64(w+1)*p.Count/int64(p.Workers)
				for i := lo; i < hi && ctx.Err() == nil; i++ {
					if !one(w, i) {
						return
					}
				}
			default:
				for ctx.Err() == nil {
					i := next.Add(1) - 1
					if i >= p.Count || !one(w, i) {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	bar.stop()
	if firstErr == nil && ctx.Err() != nil && p.Count > 0 && done.Load() < p.Count {
		firstErr = fmt.Errorf("%s: %w", p.Name, context.Cause(ctx))
	}
	var h Histogram
	for i := range hists {
		h.Merge(&hists[i])
	}
	res.Ops, res.Bytes, res.Seconds = done.Load(), bytes.Load(), elapsed.Seconds()
	if res.Seconds > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Seconds
		res.MiBPerSec = float64(res.Bytes) / (1 << 20) / res.Seconds
	}
	res.Latency = LatencyOf(&h)
	if firstErr == nil && res.Ops == 0 {
		firstErr = errors.New(p.Name + ": no op completed")
	}
	return res, firstErr
}

// bar drives a progress bar from a ticker so the workers never touch it.
type bar struct {
	stopCh chan struct{}
	done   chan struct{}
}

func (b *bar) stop() {
	if b == nil {
		return
	}
	close(b.stopCh)
	<-b.done
}

func startBar(p Phase, done *atomic.Int64, start time.Time) *bar {
	if p.Progress == nil {
		return nil
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(p.Progress),
		progressbar.OptionSetDescription(fmt.Sprintf("%-12s", p.Name)),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	}
	max := p.Count
	if p.Count == 0 {
		// A timed phase: the bar is the time, the description the ops.
		max = p.Duration.Milliseconds()
	} else {
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("ops"))
	}
	pb := progressbar.NewOptions64(max, opts...)
	b := &bar{stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		update := func() {
			if p.Count == 0 {
				el := time.Since(start)
				pb.Describe(fmt.Sprintf("%-12s %d ops", p.Name, done.Load()))
				pb.Set64(min(el.Milliseconds(), max))
			} else {
				pb.Set64(done.Load())
			}
		}
		for {
			select {
			case <-b.stopCh:
				update()
				pb.Finish()
				pb.Clear()
				return
			case <-t.C:
				update()
			}
		}
	}()
	return b
}
