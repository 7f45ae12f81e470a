package bench

import (
	"sync"
	"sync/atomic"
	"time"
)

// Spread runs op for i in [0, n) from workers goroutines, each taking the
// next i, and returns how long all of it took. A worker stops at its first
// error; the first error is returned.
func Spread(workers, n int, op func(i int) error) (time.Duration, error) {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := op(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), first
}
