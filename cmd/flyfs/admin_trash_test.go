package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/posix/fusefs"
)

// flyfs admin trash: an rm -rf through the mount, with the trash on, is
// listed and restored whole by --path; the files read back byte-identical
// through the mount, after GC has run (no grace).
func TestAdminTrash(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: this test needs the fuse kernel module")
	}
	c := harness.StartFS(t, harness.FSConfig{TrashDays: 3})
	ctx := context.Background()
	mnt := t.TempDir()
	m, err := fusefs.Mount(ctx, c.FS(), mnt, fusefs.Options{AttrTimeout: -1, EntryTimeout: -1})
	if err != nil {
		t.Skipf("cannot mount FUSE here: %v", err)
	}
	t.Cleanup(func() { m.Unmount() })
	files := map[string][]byte{"run/ckpt-1": bytes.Repeat([]byte("a"), 3<<20+7), "run/logs/out.txt": []byte("step 1\n"), "run/logs/err.txt": nil}
	for p, data := range files {
		full := filepath.Join(mnt, "data", p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(mnt, "data/run")); err != nil {
		t.Fatal(err)
	}
	admin := func(args ...string) string {
		t.Helper()
		out, err := run(t, append([]string{"admin", "trash", "--mgmtd", strings.Join(c.MgmtdAddrs(), ","), "--token", c.Token, "--timeout", "30s"}, args...)...)
		if err != nil {
			t.Fatalf("admin trash %v: %v\n%s", args, err, out)
		}
		return out
	}
	var listed []metaapi.TrashEntry
	if err := json.Unmarshal([]byte(admin("list", "--json")), &listed); err != nil || len(listed) != len(files) {
		t.Fatalf("trash list --json: %v %+v", err, listed)
	}
	if out := admin("list"); !strings.Contains(out, "/data/run/ckpt-1") || !strings.Contains(out, "3.0 MiB") {
		t.Fatalf("trash list:\n%s", out)
	}
	if _, err := c.FS().Meta().Collect(ctx, true); err != nil {
		t.Fatal(err)
	}
	if out := admin("restore", "--path", "/data/run"); strings.Count(out, "restored ") != len(files) {
		t.Fatalf("trash restore --path:\n%s", out)
	}
	for p, data := range files {
		got, err := os.ReadFile(filepath.Join(mnt, "data", p))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s after the restore: %v (%d bytes)", p, err, len(got))
		}
	}
	if out := admin("list"); !strings.Contains(out, "The trash is empty.") {
		t.Fatalf("trash list after the restore:\n%s", out)
	}
	// Emptying frees the space now.
	if err := os.Remove(filepath.Join(mnt, "data/run/ckpt-1")); err != nil {
		t.Fatal(err)
	}
	if out := admin("empty", "--yes"); !strings.Contains(out, "emptied the trash: 1 entries") {
		t.Fatalf("trash empty:\n%s", out)
	}
	if out := admin("list"); !strings.Contains(out, "The trash is empty.") {
		t.Fatalf("trash list after emptying:\n%s", out)
	}
	if r, err := c.FS().Meta().Fsck(ctx); err != nil || len(r.Problems) > 0 {
		t.Fatalf("fsck: %v %+v", err, r)
	}
}
