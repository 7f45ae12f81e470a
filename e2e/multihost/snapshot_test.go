package multihost

import (
	"bytes"
	"context"
	"fmt"
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
		if err := fs.MkdirAll(ctx, "/snapt/run", 0o755); err != nil {
			s.T.Fatal(err)
		}
		body := func(i int, gen string) []byte { return bytes.Repeat([]byte(fmt.Sprintf("%s-%d;", gen, i)), 20_000) }
		for i := 0; i < files; i++ {
			f, err := fs.Create(ctx, fmt.Sprintf("/snapt/run/d%02d/f%04d", i%30, i), 0o644)
			if err != nil {
				if err := fs.MkdirAll(ctx, fmt.Sprintf("/snapt/run/d%02d", i%30), 0o755); err != nil {
					s.T.Fatal(err)
				}
				if f, err = fs.Create(ctx, fmt.Sprintf("/snapt/run/d%02d/f%04d", i%30, i), 0o644); err != nil {
					s.T.Fatal(err)
				}
			}
			if i < written {
				if _, err := f.WriteAtContext(ctx, body(i, "old"), 0); err != nil {
					s.T.Fatal(err)
				}
			}
			if err := f.CloseContext(ctx); err != nil {
				s.T.Fatal(err)
			}
		}
		run, err := fs.Meta().Resolve(ctx, "/snapt/run", true)
		if err != nil {
			s.T.Fatal(err)
		}
		type result struct {
			snap metaapi.Snapshot
			err  error
		}
		done := make(chan result, 1)
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
		s.T.Logf("snapshot: %d files in %d batch(es)", r.snap.Files, r.snap.Batches)
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
