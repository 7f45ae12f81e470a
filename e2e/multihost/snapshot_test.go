package multihost

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// (e) kill -9 each metad in turn while a snapshot of a tree is made, with
// the workload writing meanwhile: the client retries the same request on
// the other metad, which takes over the snapshot's freeze, drops the
// unfinished copy and makes it anew; the snapshot holds the tree as it was
// (files written after it read their old bytes there), and the workload's
// checks and fsck pass.
func TestKillMetadDuringSnapshot(t *testing.T) {
	runScenario(t, true, Config{}, WorkloadConfig{}, func(s *Scenario) {
		ctx := context.Background()
		fs := s.C.Dial(60 * time.Second)
		const files, written = 1500, 20
		body := func(i int, gen string) []byte { return bytes.Repeat([]byte(fmt.Sprintf("%s-%d;", gen, i)), 20_000) }
		// The tree is made by 16 creators at once: one by one, its 3,000
		// commits on the three-host etcd took minutes the workload filled
		// with gigabytes for the checks to read back.
		setup := time.Now()
		for d := 0; d < 30; d++ {
			if err := fs.MkdirAll(ctx, fmt.Sprintf("/snapt/run/d%02d", d), 0o755); err != nil {
				s.T.Fatal(err)
			}
		}
		var next atomic.Int64
		errs := make(chan error, 16)
		for range 16 {
			go func() {
				for {
					i := int(next.Add(1) - 1)
					if i >= files {
						errs <- nil
						return
					}
					f, err := fs.Create(ctx, fmt.Sprintf("/snapt/run/d%02d/f%04d", i%30, i), 0o644)
					if err == nil && i < written {
						_, err = f.WriteAtContext(ctx, body(i, "old"), 0)
					}
					if err == nil {
						err = f.CloseContext(ctx)
					}
					if err != nil {
						errs <- fmt.Errorf("f%04d: %w", i, err)
						return
					}
				}
			}()
		}
		for range 16 {
			if err := <-errs; err != nil {
				s.T.Fatal(err)
			}
		}
		s.T.Logf("%d files made in %v", files, time.Since(setup).Round(time.Millisecond))
		run, err := fs.Meta().Resolve(ctx, "/snapt/run", true)
		if err != nil {
			s.T.Fatal(err)
		}
		type result struct {
			snap metaapi.Snapshot
			err  error
		}
		done := make(chan result, 1)
		snapStart := time.Now()
		go func() {
			snap, err := fs.Meta().SnapshotCreate(ctx, run.ID, "s")
			done <- result{snap, err}
		}()
		for _, m := range s.Rng.Perm(len(s.C.Metad)) {
			s.Pause(50*time.Millisecond, 400*time.Millisecond)
			s.T.Logf("kill -9 metad%d while the snapshot is made", m+1)
			s.C.Metad[m].Kill()
			s.Pause(500*time.Millisecond, 1500*time.Millisecond)
			s.C.Metad[m].Start()
		}
		var r result
		select {
		case r = <-done:
		case <-time.After(3 * time.Minute):
			s.T.Fatal("the snapshot did not end within 3 minutes")
		}
		if r.err != nil {
			s.T.Fatalf("snapshot: %v", r.err)
		}
		s.T.Logf("snapshot: %d files in %d batch(es), %v", r.snap.Files, r.snap.Batches, time.Since(snapStart).Round(time.Millisecond))
		if r.snap.Files != files || r.snap.Building {
			s.T.Fatalf("snapshot: %+v", r.snap)
		}
		// The live files change; the snapshot's stay.
		for i := 0; i < written; i++ {
			f, err := fs.OpenFile(ctx, fmt.Sprintf("/snapt/run/d%02d/f%04d", i%30, i), 1 /* O_WRONLY */, 0)
			if err != nil {
				s.T.Fatal(err)
			}
			if _, err := f.WriteAtContext(ctx, body(i, "new"), 0); err != nil {
				s.T.Fatal(err)
			}
			f.CloseContext(ctx)
		}
		count := 0
		for d := 0; d < 30; d++ {
			ents, err := fs.ReadDir(ctx, fmt.Sprintf("%s/d%02d", r.snap.Path, d))
			if err != nil {
				s.T.Fatal(err)
			}
			count += len(ents)
		}
		if count != files {
			s.T.Fatalf("the snapshot holds %d files, want %d", count, files)
		}
		for i := 0; i < written; i++ {
			got, err := readAll(ctx, fs, fmt.Sprintf("%s/d%02d/f%04d", r.snap.Path, i%30, i))
			if err != nil || !bytes.Equal(got, body(i, "old")) {
				s.T.Fatalf("snapshot's f%04d: %d bytes, %v", i, len(got), err)
			}
		}
		if err := fs.Meta().SnapshotDelete(ctx, r.snap.Top, "s"); err != nil {
			s.T.Fatal(err)
		}
	})
}
