package ns

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadDirStableUnderInserts lists a directory in small pages while another
// Namespace inserts and removes other names in it: every entry that exists for
// the whole listing comes back exactly once, in strictly increasing order.
func TestReadDirStableUnderInserts(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	dir, err := e.mkdir("/d")
	if err != nil {
		t.Fatal(err)
	}
	const stable = 400
	for i := range stable {
		if _, err := e.ns.Create(ctx, CreateRequest{Parent: dir.ID, Name: fmt.Sprintf("e%05d", 2*i)}); err != nil {
			t.Fatal(err)
		}
	}
	writer := e.another(testOpts())
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	var inserted atomic.Int64
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			// Odd names land between the stable ones; some are removed again.
			name := fmt.Sprintf("e%05d", (2*(i*37)+1)%(2*stable+2))
			if _, err := writer.Create(ctx, CreateRequest{Parent: dir.ID, Name: name}); err != nil {
				t.Error(err)
				return
			}
			inserted.Add(1)
			if i%3 == 0 {
				if err := writer.Unlink(ctx, RemoveRequest{Parent: dir.ID, Name: name}); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	// The listings must overlap the writer's changes: wait for its first,
	// and go on listing (5 passes at least) until it has made more.
	deadline := time.Now().Add(10 * time.Second)
	for inserted.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	before := inserted.Load()
	for pass := 0; pass < 5 || inserted.Load() == before && time.Now().Before(deadline); pass++ {
		seen := map[string]int{}
		after, prev := "", ""
		for {
			ents, more, err := e.ns.ReadDir(ctx, dir.ID, after, 7)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ents {
				if d.Name <= prev {
					t.Fatalf("pass %d: %q after %q", pass, d.Name, prev)
				}
				prev = d.Name
				seen[d.Name]++
			}
			if !more {
				break
			}
			after = ents[len(ents)-1].Name
		}
		for i := range stable {
			if n := seen[fmt.Sprintf("e%05d", 2*i)]; n != 1 {
				t.Fatalf("pass %d: stable entry %d seen %d times", pass, 2*i, n)
			}
		}
	}
	during := inserted.Load() - before
	stop.Store(true)
	wg.Wait()
	if during == 0 {
		t.Fatal("the writer made no change while the directory was listed")
	}
	t.Logf("%d inserts, %d of them while the directory was listed", inserted.Load(), during)
	mustFsck(t, e.db)
}
