package ns

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/kv"
)

// fakeClock is a settable clock for Options.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestRemoveAllHugeTree: a 10 000-entry tree goes in one RemoveAll call and
// vanishes at once; GC then drains it in many small batches, fsck staying
// clean throughout, and returns every file for chunk deletion.
func TestRemoveAllHugeTree(t *testing.T) {
	e := newEnv(t, nil, Options{GCGrace: -1, GCExpandBatch: 128})
	base, err := e.ns.StatFS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	top, err := e.mkdir("/big")
	if err != nil {
		t.Fatal(err)
	}
	const dirs, files = 10, 999 // 10 + 9990 = 10 000 entries under /big
	t0 := time.Now()
	var wg sync.WaitGroup
	for d := range dirs {
		sub, err := e.ns.Mkdir(ctx, MkdirRequest{Parent: top.ID, Name: fmt.Sprintf("d%d", d)})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range files {
				r, err := e.ns.Create(ctx, CreateRequest{Parent: sub.ID, Name: fmt.Sprintf("f%04d", f)})
				if err != nil {
					t.Error(err)
					return
				}
				if f%100 == 0 {
					if _, err := e.ns.Truncate(ctx, r.Inode.ID, 1<<20); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("built the tree in %v", time.Since(t0))
	t0 = time.Now()
	full, _ := e.ns.StatFS(ctx)
	if full.Inodes != base.Inodes+1+dirs+dirs*files {
		t.Fatalf("statfs %+v before removal", full)
	}

	_, before := e.ns.Retries()
	if err := e.removeAll("/big"); err != nil {
		t.Fatal(err)
	}
	if _, after := e.ns.Retries(); after-before != 1 {
		t.Fatalf("RemoveAll ran %d transactions", after-before)
	}
	if _, err := e.ino("/big"); wantErrno(err, ErrNotExist) != nil {
		t.Fatalf("/big after RemoveAll: %v", err)
	}
	if names, _ := e.names("/"); len(names) != 0 {
		t.Fatalf("root lists %v", names)
	}
	mustFsck(t, e.db)

	var removed []Removed
	batches := 0
	for {
		got, err := e.ns.GCBatch(ctx, 40)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.ns.GCDone(ctx, got); err != nil {
			t.Fatal(err)
		}
		removed = append(removed, got...)
		batches++
		if batches == 20 {
			mustFsck(t, e.db) // half-expanded trees are consistent too
		}
		if len(got) > 0 {
			continue
		}
		if l, _ := e.ns.GCQueueLength(ctx); l == 0 {
			break
		}
	}
	if len(removed) != dirs*files {
		t.Fatalf("GC returned %d files, want %d", len(removed), dirs*files)
	}
	var bytes uint64
	seen := map[uint64]bool{}
	for _, r := range removed {
		if seen[r.Ino] {
			t.Fatalf("inode %d returned twice", r.Ino)
		}
		seen[r.Ino] = true
		bytes += r.Length
	}
	if bytes != dirs*10<<20 {
		t.Fatalf("removed files hold %d bytes", bytes)
	}
	t.Logf("drained in %d GCBatch calls, %v", batches, time.Since(t0))
	if batches < 10 {
		t.Fatalf("GC drained 10 000 entries in %d batches: not batched", batches)
	}
	r := mustFsck(t, e.db)
	st, _ := e.ns.StatFS(ctx)
	if r.Inodes != 1 || st != base {
		t.Fatalf("after GC: %d inodes, statfs %+v, want %+v", r.Inodes, st, base)
	}
}

// TestGCGraceAndSessions: removed files wait out the grace period; a file
// unlinked while open for writing waits for its last close; a file inside a
// removed tree that is open for writing survives the tree's expansion until
// closed; sessions of dead clients are reaped and that frees their files.
func TestGCGraceAndSessions(t *testing.T) {
	clock := newClock()
	e := newEnv(t, nil, Options{GCGrace: time.Minute, Now: clock.Now})
	mk := func(path string) uint64 {
		r, err := e.create(path, true)
		if err != nil {
			t.Fatal(err)
		}
		return r.Inode.ID
	}
	gc := func() map[uint64]bool {
		got, err := e.ns.GCBatch(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.ns.GCDone(ctx, got); err != nil {
			t.Fatal(err)
		}
		m := map[uint64]bool{}
		for _, r := range got {
			m[r.Ino] = true
		}
		return m
	}

	plain := mk("/plain")
	open := mk("/open")
	o, err := e.ns.Open(ctx, open, syscall.O_WRONLY, "alive")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.mkdir("/tree"); err != nil {
		t.Fatal(err)
	}
	inTree := mk("/tree/w")
	o2, err := e.ns.Open(ctx, inTree, syscall.O_RDWR, "alive")
	if err != nil {
		t.Fatal(err)
	}
	dead := mk("/dead")
	if _, err := e.ns.Open(ctx, dead, syscall.O_WRONLY, "crashed"); err != nil {
		t.Fatal(err)
	}

	for _, p := range []string{"/plain", "/open", "/dead"} {
		if err := e.unlink(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.removeAll("/tree"); err != nil {
		t.Fatal(err)
	}
	mustFsck(t, e.db)
	if got := gc(); len(got) != 0 { // the tree expands, nothing is due yet
		t.Fatalf("reclaimed %v inside the grace period", got)
	}
	clock.Advance(30 * time.Second)
	if got := gc(); len(got) != 0 {
		t.Fatalf("reclaimed %v inside the grace period", got)
	}
	clock.Advance(31 * time.Second)
	if got := gc(); len(got) != 1 || !got[plain] {
		t.Fatalf("after the grace period reclaimed %v, want only %d", got, plain)
	}
	if in, err := e.ns.Stat(ctx, inTree); err != nil || in.Nlink != 0 {
		t.Fatalf("open file of a removed tree: %+v %v", in, err)
	}
	mustFsck(t, e.db)

	// Closing queues; the grace period counts from the close.
	if _, err := e.ns.Close(ctx, *o.Session, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ns.Close(ctx, *o2.Session, &LengthHint{Length: 10}); err != nil {
		t.Fatal(err)
	}
	reaped, err := e.ns.ReapSessions(ctx, func(c ClientID) bool { return c == "alive" })
	if err != nil || reaped != 1 {
		t.Fatalf("reaped %d: %v", reaped, err)
	}
	if got := gc(); len(got) != 0 {
		t.Fatalf("reclaimed %v right after close", got)
	}
	clock.Advance(2 * time.Minute)
	if got := gc(); len(got) != 3 || !got[open] || !got[inTree] || !got[dead] {
		t.Fatalf("reclaimed %v, want %d %d %d", got, open, inTree, dead)
	}
	if l, _ := e.ns.GCQueueLength(ctx); l != 0 {
		t.Fatalf("queue holds %d", l)
	}
	if r := mustFsck(t, e.db); r.Inodes != 1 {
		t.Fatalf("%d inodes left", r.Inodes)
	}
}

// TestStatFSFolding: deltas fold into the base without changing the totals,
// also with several Namespaces writing.
func TestStatFSFolding(t *testing.T) {
	clock := newClock()
	opts := testOpts()
	opts.Now = clock.Now
	e := newEnv(t, nil, opts)
	other := e.another(opts)
	for i := range 50 {
		n := e.ns
		if i%2 == 1 {
			n = other
		}
		r, err := n.Create(ctx, CreateRequest{Parent: RootID, Name: fmt.Sprintf("f%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Truncate(ctx, r.Inode.ID, uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := e.ns.StatFS(ctx)
	clock.Advance(time.Minute)
	if err := other.foldStats(ctx); err != nil {
		t.Fatal(err)
	}
	var deltas int
	_ = e.ns.view(ctx, func(tx kv.ReadTxn) error {
		_, deltas, _ = readStats(ctx, tx)
		return nil
	})
	after, _ := e.ns.StatFS(ctx)
	if before != after || after.Inodes != 51 || after.Bytes != 49*50/2 || deltas != 0 {
		t.Fatalf("before %+v, after %+v, %d deltas left", before, after, deltas)
	}
	mustFsck(t, e.db)
}

// TestGCClaimSurvivesAWorkerCrash: a worker that takes files from the queue
// and dies before GCDone does not lose them: once its claim expires another
// worker (another metad) gets the same files, and only GCDone deletes inodes.
func TestGCClaimSurvivesAWorkerCrash(t *testing.T) {
	clock := newClock()
	opts := Options{GCGrace: time.Minute, GCClaim: 2 * time.Minute, Now: clock.Now}
	e := newEnv(t, nil, opts)
	other := e.another(opts)
	r, err := e.create("/f", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.unlink("/f"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(61 * time.Second)
	got, err := e.ns.GCBatch(ctx, 10)
	if err != nil || len(got) != 1 || got[0].Ino != r.Inode.ID {
		t.Fatalf("first worker got %+v (%v)", got, err)
	}
	// It crashes here. Within the claim nobody else gets the file.
	if again, err := other.GCBatch(ctx, 10); err != nil || len(again) != 0 {
		t.Fatalf("claimed file handed out again within the claim: %+v %v", again, err)
	}
	if _, err := e.ns.Stat(ctx, r.Inode.ID); err != nil {
		t.Fatalf("inode gone before GCDone: %v", err)
	}
	mustFsck(t, e.db)
	clock.Advance(2*time.Minute + time.Second)
	again, err := other.GCBatch(ctx, 10)
	if err != nil || len(again) != 1 || again[0].Ino != r.Inode.ID {
		t.Fatalf("after the claim expired another worker got %+v (%v)", again, err)
	}
	// The crashed worker's late GCDone finds its claim gone and does nothing.
	if err := e.ns.GCDone(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ns.Stat(ctx, r.Inode.ID); err != nil {
		t.Fatalf("a stale GCDone deleted the inode another worker holds: %v", err)
	}
	if err := other.GCDone(ctx, again); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ns.Stat(ctx, r.Inode.ID); !errors.Is(err, ErrNotExist) {
		t.Fatalf("inode after GCDone: %v", err)
	}
	if n, _ := e.ns.GCQueueLength(ctx); n != 0 {
		t.Fatalf("queue holds %d entries", n)
	}
	mustFsck(t, e.db)
}

// TestGCQueueStats: the queue says how many bytes its files hold, and how
// many of them are due.
func TestGCQueueStats(t *testing.T) {
	opts := testOpts()
	opts.GCGrace = time.Hour
	e := newEnv(t, nil, opts)
	for _, p := range []string{"/a", "/b"} {
		c, err := e.create(p, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.ns.Truncate(ctx, c.Inode.ID, 1000); err != nil {
			t.Fatal(err)
		}
		if err := e.unlink(p); err != nil {
			t.Fatal(err)
		}
	}
	// Within the hour's grace nothing is due; without a grace all is.
	if q, err := e.ns.GCQueue(ctx); err != nil || q != (GCQueueSummary{Entries: 2, Bytes: 2000}) {
		t.Fatalf("GC queue in the grace period: %+v, %v", q, err)
	}
	opts.GCGrace = -1
	if q, err := e.another(opts).GCQueue(ctx); err != nil || q != (GCQueueSummary{Entries: 2, Bytes: 2000, Due: 2, DueBytes: 2000}) {
		t.Fatalf("GC queue without a grace period: %+v, %v", q, err)
	}
}
