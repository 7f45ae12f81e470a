package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Drive calls op from n goroutines until d has passed and returns how many
// calls succeeded, how long it took, and the first error. op gets a context
// that ends with the window, its worker number and its call number; an error
// returned after the window closed (a call cut short) is not an error.
func Drive(ctx context.Context, d time.Duration, n int, op func(ctx context.Context, worker int, i int64) error) (int64, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var ok atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := int64(0); ctx.Err() == nil; i++ {
				if err := op(ctx, w, i); err != nil {
					if ctx.Err() == nil {
						once.Do(func() { first = err })
					}
					return
				}
				ok.Add(1)
			}
		}(w)
	}
	wg.Wait()
	return ok.Load(), time.Since(start), first
}
