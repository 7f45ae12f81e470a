package console

import (
	"context"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// The namespace's byte total (StatFS) sums every file's length: live files,
// and also noncurrent versions, the trash and snapshots, which no StatFS
// counter tells apart. The console counts those itself, by listing them,
// every retainedEvery (in the background, whether or not anyone is signed
// in) within retainedBudget and retainedMax entries; a count that stops at
// its bound says so, and its figures are lower bounds.
const (
	retainedEvery  = 5 * time.Minute
	retainedBudget = 10 * time.Second
	retainedMax    = 500_000
)

// retainedJSON is the last count.
type retainedJSON struct {
	VersionFiles  int64  `json:"versionFiles"`
	VersionBytes  uint64 `json:"versionBytes"`
	DeleteMarkers int64  `json:"deleteMarkers"`
	TrashEntries  int64  `json:"trashEntries"`
	TrashBytes    uint64 `json:"trashBytes"`
	// Snapshots' files share their chunks with the files they were taken
	// of until those are written: their bytes are in the total of lengths,
	// not (yet) on disk twice.
	SnapshotFiles int64     `json:"snapshotFiles"`
	SnapshotBytes uint64    `json:"snapshotBytes"`
	Complete      bool      `json:"complete"`
	At            time.Time `json:"at"`
	Error         string    `json:"error,omitempty"`
}

// retainedCounter keeps the last count and runs at most one at a time.
type retainedCounter struct {
	mu      sync.Mutex
	last    *retainedJSON
	running bool
}

// get is the last count (nil: none finished yet).
func (r *retainedCounter) get() *retainedJSON {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		return nil
	}
	v := *r.last
	return &v
}

// maybeCount starts a count in the background when the last is older than
// retainedEvery (or there is none) and none runs.
func (r *retainedCounter) maybeCount(ctx context.Context, c *Console, now time.Time) {
	r.mu.Lock()
	if r.running || (r.last != nil && now.Sub(r.last.At) < retainedEvery) {
		r.mu.Unlock()
		return
	}
	r.running = true
	r.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		res := c.countRetained(ctx)
		res.At = now
		r.mu.Lock()
		r.last, r.running = &res, false
		r.mu.Unlock()
	}()
}

// countRetained lists the noncurrent versions of every top-level directory
// (bucket), the trash (walking trashed trees), and the snapshots.
func (c *Console) countRetained(ctx context.Context) retainedJSON {
	ctx, cancel := context.WithTimeout(ctx, retainedBudget)
	defer cancel()
	out := retainedJSON{Complete: true}
	seen := 0
	full := func() bool {
		if seen >= retainedMax || ctx.Err() != nil {
			out.Complete = false
			return true
		}
		return false
	}
	fail := func(err error) retainedJSON {
		if ctx.Err() != nil { // the budget ran out: what was counted stands
			out.Complete = false
			return out
		}
		out.Error, out.Complete = err.Error(), false
		return out
	}

	snaps, err := c.meta().SnapshotList(ctx)
	if err != nil {
		return fail(err)
	}
	for _, s := range snaps {
		out.SnapshotFiles += int64(s.Files)
		out.SnapshotBytes += s.Bytes
	}

	root, err := c.meta().Resolve(ctx, "/", true)
	if err != nil {
		return fail(err)
	}
	after := ""
	for {
		buckets, more, err := c.meta().ReadDir(ctx, root.ID, after, 1000, false)
		if err != nil {
			return fail(err)
		}
		for _, b := range buckets {
			after = b.Name
			if b.Type != metaapi.TypeDir {
				continue
			}
			req := metaapi.ListVersionsReq{Bucket: b.Ino, Limit: 1000}
			for {
				if full() {
					return out
				}
				page, err := c.meta().ListVersions(ctx, req)
				if err != nil {
					return fail(err)
				}
				for _, e := range page.Entries {
					seen++
					switch {
					case e.DeleteMarker:
						out.DeleteMarkers++
					case e.Inode != nil:
						out.VersionFiles++
						out.VersionBytes += e.Inode.Length
					}
				}
				if !page.More || len(page.Entries) == 0 {
					break
				}
				last := page.Entries[len(page.Entries)-1]
				req.AfterKey, req.AfterSeq = last.Key, last.Seq
			}
		}
		if !more || len(buckets) == 0 {
			break
		}
	}

	trash, _, err := c.meta().TrashList(ctx)
	if err != nil {
		return fail(err)
	}
	for _, e := range trash {
		if full() {
			return out
		}
		seen++
		out.TrashEntries++
		if e.Type != metaapi.TypeDir {
			out.TrashBytes += e.Length
			continue
		}
		in, err := c.meta().Resolve(ctx, e.Trash, false)
		if err != nil {
			continue // restored or purged since the list
		}
		n, err := c.countTree(ctx, in.ID, retainedMax-seen)
		if err != nil {
			return fail(err)
		}
		seen += int(n.Files + n.Dirs)
		out.TrashBytes += uint64(n.Bytes)
		if !n.Complete {
			out.Complete = false
			return out
		}
	}
	return out
}
