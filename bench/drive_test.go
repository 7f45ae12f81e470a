package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestDriveCountsAndReportsTheFirstError(t *testing.T) {
	n, el, err := Drive(context.Background(), 50*time.Millisecond, 4, func(ctx context.Context, w int, i int64) error { return nil })
	if err != nil || n == 0 || el < 50*time.Millisecond {
		t.Fatalf("n=%d el=%v err=%v", n, el, err)
	}
	boom := errors.New("boom")
	_, _, err = Drive(context.Background(), time.Second, 2, func(ctx context.Context, w int, i int64) error {
		if i == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("first error: %v", err)
	}
	// A call cut short by the end of the window is not an error.
	_, _, err = Drive(context.Background(), 20*time.Millisecond, 2, func(ctx context.Context, w int, i int64) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if err != nil {
		t.Fatalf("a call cut short by the window was reported: %v", err)
	}
}

func TestSpreadRunsEachIndexOnceAndReportsTheFirstError(t *testing.T) {
	var seen [1000]atomic.Int32
	if _, err := Spread(8, len(seen), func(i int) error { seen[i].Add(1); return nil }); err != nil {
		t.Fatal(err)
	}
	for i := range seen {
		if n := seen[i].Load(); n != 1 {
			t.Fatalf("index %d ran %d times", i, n)
		}
	}
	boom := errors.New("boom")
	if _, err := Spread(4, 100, func(i int) error {
		if i == 50 {
			return boom
		}
		return nil
	}); err != boom {
		t.Fatalf("error: %v", err)
	}
}
