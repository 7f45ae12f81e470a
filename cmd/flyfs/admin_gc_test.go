package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/e2e/harness"
)

// flyfs admin gc: files in their grace period stay; --no-grace frees them at
// once, and the storage nodes hold no chunk of them afterwards.
func TestAdminGC(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{GCGrace: 5 * time.Minute})
	ctx := context.Background()
	fs := c.FS()
	f, err := fs.Create(ctx, "/big", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte("x"), 3<<20), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := fs.Remove(ctx, "/big"); err != nil {
		t.Fatal(err)
	}
	gc := func(args ...string) string {
		t.Helper()
		out, err := run(t, append([]string{"admin", "gc", "--mgmtd", strings.Join(c.MgmtdAddrs(), ","), "--token", c.Token, "--timeout", "30s"}, args...)...)
		if err != nil {
			t.Fatalf("admin gc %v: %v\n%s", args, err, out)
		}
		return out
	}
	if out := gc(); !strings.Contains(out, "freed 0 files") || !strings.Contains(out, "1 entries still queued") {
		t.Fatalf("within the grace period: %s", out)
	}
	chunks := func() (n uint64) {
		for _, st := range fs.NodeStats(ctx, c.Routing()) {
			for _, d := range st.Disks {
				n += d.Chunks
			}
		}
		return n
	}
	if chunks() == 0 {
		t.Fatal("no chunks stored before the collection")
	}
	if out := gc("--no-grace"); !strings.Contains(out, "freed 1 files, 3.0 MiB") || !strings.Contains(out, "0 entries still queued") {
		t.Fatalf("without the grace: %s", out)
	}
	if n := chunks(); n != 0 {
		t.Fatalf("%d chunks left after the collection", n)
	}
}
