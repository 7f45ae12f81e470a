package engine

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSyncGroupCoversEveryWrite: many writers, each "writing" (a counter
// bumped) and then syncing; every sync records the writes done when it
// began. Each writer's sync must return only after a sync that saw its
// write, and under concurrency the writers share syncs.
func TestSyncGroupCoversEveryWrite(t *testing.T) {
	var g syncGroup
	var written atomic.Uint64 // writes done so far
	var mu sync.Mutex
	var covered uint64 // writes done when the last completed sync began
	runs := 0
	run := func() error {
		saw := written.Load()
		time.Sleep(200 * time.Microsecond) // a sync takes a while: others arrive meanwhile
		mu.Lock()
		covered = max(covered, saw)
		runs++
		mu.Unlock()
		return nil
	}
	const writers, rounds = 16, 50
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range rounds {
				me := written.Add(1)
				if err := g.writeDurable(run); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				c := covered
				mu.Unlock()
				if c < me {
					t.Errorf("write %d returned with syncs covering only %d", me, c)
					return
				}
			}
		})
	}
	wg.Wait()
	if runs >= writers*rounds {
		t.Errorf("%d syncs for %d writes: none shared", runs, writers*rounds)
	}
	t.Logf("%d syncs for %d writes", runs, writers*rounds)
}

// TestSyncGroupFailureSticks: the caller a failed sync covered gets its
// error, and so does every caller after it, although later syncs succeed;
// a caller served before the failure did not see it.
func TestSyncGroupFailureSticks(t *testing.T) {
	var g syncGroup
	ok := func() error { return nil }
	lost := errors.New("EIO")
	if err := g.writeDurable(ok); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	if err := g.writeDurable(func() error { return lost }); !errors.Is(err, lost) {
		t.Fatalf("failed sync: %v, want %v", err, lost)
	}
	for i := range 3 {
		if err := g.writeDurable(ok); !errors.Is(err, lost) {
			t.Fatalf("sync %d after the failure: %v, want %v", i, err, lost)
		}
	}
}

// TestSyncGroupWaitsForALaterSync: a caller that arrives while a sync runs
// is not served by that sync (it may have begun before the caller's
// write), but by the next.
func TestSyncGroupWaitsForALaterSync(t *testing.T) {
	var g syncGroup
	inFirst, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	first := make(chan error, 1)
	go func() {
		first <- g.writeDurable(func() error {
			calls.Add(1)
			close(inFirst)
			<-release
			return nil
		})
	}()
	<-inFirst
	second := make(chan error, 1)
	go func() { second <- g.writeDurable(func() error { calls.Add(1); return nil }) }()
	time.Sleep(20 * time.Millisecond) // the second caller is waiting now (or about to)
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d syncs ran, want 2: the second caller was served by the sync running when it came", n)
	}
}

// TestSyncGroupDeferredWrites: writes counted without a sync leave the
// file pending; one sync covers them all, and a sync with nothing counted
// since runs none.
func TestSyncGroupDeferredWrites(t *testing.T) {
	var g syncGroup
	runs := 0
	run := func() error { runs++; return nil }
	if g.pending() {
		t.Fatal("a new file is pending")
	}
	for range 5 {
		g.wrote()
	}
	if !g.pending() {
		t.Fatal("5 deferred writes, not pending")
	}
	if err := g.sync(run); err != nil || runs != 1 {
		t.Fatalf("sync: %v after %d runs, want nil after 1", err, runs)
	}
	if g.pending() {
		t.Fatal("pending after a sync covered every write")
	}
	if err := g.sync(run); err != nil || runs != 1 {
		t.Fatalf("sync with nothing new: %v after %d runs, want nil after 1", err, runs)
	}
	lost := errors.New("EIO")
	g.wrote()
	if err := g.sync(func() error { return lost }); !errors.Is(err, lost) {
		t.Fatalf("failed sync of a deferred write: %v, want %v", err, lost)
	}
	if err := g.sync(run); !errors.Is(err, lost) || !g.pending() {
		t.Fatalf("after the failure: %v (pending %v), want %v and still pending", err, g.pending(), lost)
	}
}
