package fusemount

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The rows of buffered I/O as a user's program does it (no O_DIRECT, the
// kernel's own read-ahead), the mount beside the loopback back to back, each
// with its goal ratio: several sequential streams, 4 KiB random reads from
// cold caches, and the one-thread small-file walk (create with 4 KiB written
// and closed, stat, read whole, rename, unlink) of ../shared/measure's
// smallfiles.py.

// Goals of the mount against the loopback.
const (
	goalSeqRead   = 0.8
	goalSeqWrite  = 1.0
	goalRandRead  = 0.7
	goalCreate4K  = 0.5
	goalStat      = 0.6
	goalRead4K    = 0.7
	goalRenameDel = 0.4
)

// side is one file system measured: its path and the tree whose cached
// pages a cold read drops (the mount's and whatever lies under it).
type side struct {
	path  string
	below []string
}

func (s side) drop() {
	for _, b := range s.below {
		dropTree(b)
	}
}

// parallelSeqRead reads the file at p as streams sequential readers, each
// its own stretch, 1 MiB at a time, after dropping the caches.
func parallelSeqRead(s side, p string, size int64, streams int) (float64, error) {
	s.drop()
	per := size / int64(streams) / ioSize * ioSize
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	start := time.Now()
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.Open(p)
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			buf := make([]byte, ioSize)
			for off := int64(i) * per; off < int64(i+1)*per; off += ioSize {
				if _, err := f.ReadAt(buf, off); err != nil {
					errs <- fmt.Errorf("read at %d: %w", off, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return mibps(per*int64(streams), time.Since(start)), nil
}

// bufferedRandRead reads 4 KiB at random offsets of the file at p from
// threads threads for d, through the page cache, after dropping the caches.
func bufferedRandRead(s side, p string, size int64, threads int, d time.Duration) (float64, error) {
	s.drop()
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	blocks := size / 4096
	bufs := make([][]byte, threads)
	for i := range bufs {
		bufs[i] = make([]byte, 4096)
	}
	return timed(threads, d, func(th int, rng *rand.Rand) (int, error) {
		off := rng.Int64N(blocks) * 4096
		if n, err := f.ReadAt(bufs[th], off); err != nil || n != 4096 {
			return 0, fmt.Errorf("read at %d: %d, %v", off, n, err)
		}
		return 1, nil
	})
}

// smallFiles runs the small-file walk over n files in dir and returns the
// rate of each step, in the order of smallFileSteps.
func smallFiles(dir string, n int) ([]float64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	data := pattern(4096)
	name := func(prefix string, i int) string { return filepath.Join(dir, fmt.Sprintf("%s%d", prefix, i)) }
	steps := []func(i int) error{
		func(i int) error { // create, write 4 KiB, close
			f, err := os.OpenFile(name("f", i), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if _, err := f.Write(data); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		},
		func(i int) error { _, err := os.Stat(name("f", i)); return err },
		func(i int) error {
			b, err := os.ReadFile(name("f", i))
			if err == nil && len(b) != len(data) {
				err = fmt.Errorf("%s: read %d bytes, wrote %d", name("f", i), len(b), len(data))
			}
			return err
		},
		func(i int) error { return os.Rename(name("f", i), name("g", i)) },
		func(i int) error { return os.Remove(name("g", i)) },
	}
	rates := make([]float64, len(steps))
	for k, step := range steps {
		start := time.Now()
		for i := range n {
			if err := step(i); err != nil {
				return nil, fmt.Errorf("%s: %w", smallFileSteps[k].name, err)
			}
		}
		rates[k] = float64(n) / time.Since(start).Seconds()
	}
	return rates, nil
}

// smallFileSteps names the steps of smallFiles with their goals.
var smallFileSteps = []struct {
	name string
	goal float64
}{
	{"create + write 4 KiB + close, 1 thread", goalCreate4K},
	{"stat, 1 thread", goalStat},
	{"read a 4 KiB file whole, 1 thread", goalRead4K},
	{"rename, 1 thread", goalRenameDel},
	{"unlink, 1 thread", goalRenameDel},
}
