package client

import (
	"context"
	"fmt"
	"path"
	"sync"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// ErrNoCache: a prefetch asked of a client without a cache to fill
// (EOPNOTSUPP to a POSIX caller).
var ErrNoCache = fmt.Errorf("this client has no cache (give it --cache-mem or --cache-dir): %w", syscall.EOPNOTSUPP)

// prefetchRun is the most one fetch of a prefetch brings in (1 MiB).
const prefetchRun = 16

// Prefetch brings [off, off+n) of a read-only File (cut at its end) into the
// cache, the disk tier's writes included, and returns the bytes it fetched;
// the rest were cached already.
func (f *File) Prefetch(ctx context.Context, off, n int64) (fetched int64, err error) {
	c := f.fs.blocks.Load()
	switch {
	case c == nil:
		return 0, pathErr("prefetch", f.path, ErrNoCache)
	case f.session != nil:
		return 0, pathErr("prefetch", f.path, syscall.EBADF) // a write handle reads around the cache
	case off < 0 || n < 0:
		return 0, pathErr("prefetch", f.path, syscall.EINVAL)
	}
	size := f.Size()
	if uint64(off) >= size || n == 0 {
		return 0, nil
	}
	end := min(uint64(off)+uint64(n), size)
	in := f.Inode()
	first, last := uint64(off)/CacheBlock, (end-1)/CacheBlock
	for b := first; b <= last; {
		if c.holds(blockKey{in.ID, in.Gen, b}, min((b+1)*CacheBlock, size)-b*CacheBlock) {
			b++
			continue
		}
		run := uint64(1)
		for b+run <= last && run < prefetchRun && !c.holds(blockKey{in.ID, in.Gen, b + run}, min((b+run+1)*CacheBlock, size)-(b+run)*CacheBlock) {
			run++
		}
		lo, hi := b*CacheBlock, min((b+run)*CacheBlock, size)
		stamp := c.begin()
		buf := make([]byte, hi-lo)
		jobs, err := f.readJobsFor(buf, lo)
		if err == nil {
			err = f.readJobs(ctx, jobs)
		}
		if err != nil {
			return fetched, pathErr("prefetch", f.path, err)
		}
		blocks := make([][]byte, run)
		for i := range blocks {
			blocks[i] = buf[uint64(i)*CacheBlock : min(uint64(i+1)*CacheBlock, uint64(len(buf)))]
		}
		if err := c.putRun(ctx, blockKey{in.ID, in.Gen, b}, blocks, stamp); err != nil {
			return fetched, pathErr("prefetch", f.path, err)
		}
		fetched += int64(hi - lo)
		b += run
	}
	c.drain()
	return fetched, nil
}

// PrefetchOptions tune FS.Prefetch.
type PrefetchOptions struct {
	Threads int // files (or 64 MiB pieces of them) fetched at once; 0: 8
	// Progress, if set, is called (from one goroutine at a time) after
	// each piece with the totals so far.
	Progress func(PrefetchSummary)
}

// PrefetchSummary is what a prefetch did.
type PrefetchSummary struct {
	Files   int   // regular files met
	Bytes   int64 // their bytes
	Fetched int64 // bytes fetched into the cache (the rest were cached already)
	Failed  int   // files that could not be read (their first errors in Errors)
	Errors  []error
	Elapsed time.Duration
}

// prefetchPiece is how much of a file one job of FS.Prefetch fills.
const prefetchPiece = 64 << 20

// maxPrefetchErrors bounds the errors a summary keeps.
const maxPrefetchErrors = 10

// Prefetch fills the cache with the files at paths and, for directories,
// every file below them, for a reader that knows what it reads next (a
// data loader's next epoch). A file that cannot be read is counted and
// skipped; the error is only for a cancelled context or no cache.
func (fs *FS) Prefetch(ctx context.Context, paths []string, opts PrefetchOptions) (PrefetchSummary, error) {
	start := time.Now()
	if fs.blocks.Load() == nil {
		return PrefetchSummary{}, ErrNoCache
	}
	threads := opts.Threads
	if threads <= 0 {
		threads = 8
	}
	type job struct {
		f     *File
		off   int64
		pend  *sync.WaitGroup // the file's pieces
		isErr *error          // the file's first error
	}
	var (
		mu  sync.Mutex
		sum PrefetchSummary
	)
	fail := func(err error) {
		mu.Lock()
		sum.Failed++
		if len(sum.Errors) < maxPrefetchErrors {
			sum.Errors = append(sum.Errors, err)
		}
		mu.Unlock()
	}
	jobs := make(chan job)
	var workers sync.WaitGroup
	for range threads {
		workers.Go(func() {
			for j := range jobs {
				n, err := j.f.Prefetch(ctx, j.off, prefetchPiece)
				mu.Lock()
				sum.Fetched += n
				if err != nil && *j.isErr == nil {
					*j.isErr = err
				}
				if opts.Progress != nil {
					opts.Progress(sum)
				}
				mu.Unlock()
				j.pend.Done()
			}
		})
	}
	// Files are opened and cut into pieces in the walk's order; each file
	// closes once its pieces are done.
	var files sync.WaitGroup
	openFile := func(p string) {
		f, err := fs.Open(ctx, p)
		if err != nil {
			fail(err)
			return
		}
		mu.Lock()
		sum.Files++
		sum.Bytes += int64(f.Size())
		mu.Unlock()
		pend := &sync.WaitGroup{}
		var ferr error
		for off := int64(0); off < int64(f.Size()) || off == 0; off += prefetchPiece {
			pend.Add(1)
			select {
			case jobs <- job{f: f, off: off, pend: pend, isErr: &ferr}:
			case <-ctx.Done():
				pend.Done()
			}
			if off+prefetchPiece >= int64(f.Size()) {
				break
			}
		}
		files.Go(func() {
			pend.Wait()
			f.Close()
			if ferr != nil {
				fail(ferr)
			}
		})
	}
	var walk func(p string)
	walk = func(p string) {
		if ctx.Err() != nil {
			return
		}
		in, err := fs.Stat(ctx, p)
		if err != nil {
			fail(err)
			return
		}
		switch in.Type {
		case metaapi.TypeFile:
			openFile(p)
		case metaapi.TypeDir:
			ents, err := fs.ReadDir(ctx, p)
			if err != nil {
				fail(err)
				return
			}
			for _, e := range ents {
				if e.Type == metaapi.TypeDir || e.Type == metaapi.TypeFile {
					walk(path.Join(p, e.Name))
				}
			}
		}
	}
	for _, p := range paths {
		walk(p)
	}
	close(jobs)
	workers.Wait()
	files.Wait()
	sum.Elapsed = time.Since(start)
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	return sum, nil
}
