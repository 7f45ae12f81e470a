package benchutil

import (
	"context"
	"errors"
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
