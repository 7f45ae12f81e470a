package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/posix/fusefs"
)

// flyfs admin snapshot through the mount: a snapshot reads back the tree as
// it was while the live tree is written, overwritten, truncated and
// removed; nothing in it can be changed (EROFS); list and delete; after GC
// the namespace checks clean.
func TestAdminSnapshot(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: this test needs the fuse kernel module")
	}
	c := harness.StartFS(t, harness.FSConfig{})
	ctx := context.Background()
	mnt := t.TempDir()
	m, err := fusefs.Mount(ctx, c.FS(), mnt, fusefs.Options{AttrTimeout: -1, EntryTimeout: -1})
	if err != nil {
		t.Skipf("cannot mount FUSE here: %v", err)
	}
	t.Cleanup(func() { m.Unmount() })
	big := make([]byte, 5<<20+3)
	for i := range big {
		big[i] = byte(i * 7)
	}
	files := map[string][]byte{"run/ckpt-1": big, "run/logs/out.txt": []byte("step 1\n"), "run/empty": nil}
	for p, data := range files {
		full := filepath.Join(mnt, "data", p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("ckpt-1", filepath.Join(mnt, "data/run/latest")); err != nil {
		t.Fatal(err)
	}
	admin := func(args ...string) string {
		t.Helper()
		out, err := run(t, append([]string{"admin", "snapshot", "--mgmtd", strings.Join(c.MgmtdAddrs(), ","), "--token", c.Token, "--timeout", "30s"}, args...)...)
		if err != nil {
			t.Fatalf("admin snapshot %v: %v\n%s", args, err, out)
		}
		return out
	}
	if out := admin("create", "/data/run", "before"); !strings.Contains(out, "at /data/.flyfs-snapshots/before/run: 3 files") {
		t.Fatalf("snapshot create:\n%s", out)
	}
	snap := filepath.Join(mnt, "data/.flyfs-snapshots/before/run")

	// The live tree changes in every way.
	f, err := os.OpenFile(filepath.Join(mnt, "data/run/ckpt-1"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("overwritten"), 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(mnt, "data/run/logs/out.txt"), []byte("step 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(mnt, "data/run/logs")); err != nil {
		t.Fatal(err)
	}
	for p, data := range files {
		got, err := os.ReadFile(filepath.Join(snap, p[len("run/"):]))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("snapshot's %s: %v (%d bytes, want %d)", p, err, len(got), len(data))
		}
	}
	if target, err := os.Readlink(filepath.Join(snap, "latest")); err != nil || target != "ckpt-1" {
		t.Fatalf("snapshot's symlink: %q %v", target, err)
	}

	// Nothing in it changes.
	rofs := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s in the snapshot: %v, want EROFS", what, err)
		}
	}
	rofs("create", os.WriteFile(filepath.Join(snap, "new"), nil, 0o644))
	_, err = os.OpenFile(filepath.Join(snap, "ckpt-1"), os.O_WRONLY, 0)
	rofs("open for writing", err)
	rofs("rm", os.Remove(filepath.Join(snap, "empty")))
	rofs("chmod", os.Chmod(filepath.Join(snap, "ckpt-1"), 0o777))
	rofs("rename", os.Rename(filepath.Join(snap, "empty"), filepath.Join(mnt, "data/x")))
	if err := os.RemoveAll(filepath.Join(mnt, "data/.flyfs-snapshots")); !errors.Is(err, syscall.EROFS) {
		t.Errorf("rm -rf of the snapshots: %v, want EROFS", err)
	}
	if got, err := os.ReadFile(filepath.Join(snap, "ckpt-1")); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("the snapshot after the attempts: %v", err)
	}

	var list []metaapi.Snapshot
	if err := json.Unmarshal([]byte(admin("list", "--json")), &list); err != nil || len(list) != 1 || list[0].Source != "/data/run" || list[0].Files != 3 {
		t.Fatalf("snapshot list --json: %v %+v", err, list)
	}
	if out := admin("list"); !strings.Contains(out, "before") || !strings.Contains(out, "/data/.flyfs-snapshots/before/run") {
		t.Fatalf("snapshot list:\n%s", out)
	}
	// Restoring is copying out (cp: the mount's bytes; the S3 gateway and
	// metad's Clone share chunks instead).
	got, _ := os.ReadFile(filepath.Join(snap, "logs/out.txt"))
	if err := os.MkdirAll(filepath.Join(mnt, "data/run/logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "data/run/logs/out.txt"), got, 0o644); err != nil {
		t.Fatal(err)
	}

	if out := admin("delete", "/data/run", "before"); !strings.Contains(out, "snapshot before of /data deleted") {
		t.Fatalf("snapshot delete:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(mnt, "data/.flyfs-snapshots")); !os.IsNotExist(err) {
		t.Fatalf("the snapshots' directory after its last snapshot went: %v", err)
	}
	if out, err := run(t, "admin", "audit", "--mgmtd", strings.Join(c.MgmtdAddrs(), ","), "--token", c.Token); err != nil ||
		!strings.Contains(out, "snapshot before of /data/run") || !strings.Contains(out, "delete snapshot before of /data") {
		t.Fatalf("audit trail: %v\n%s", err, out)
	}
	if _, err := c.FS().Meta().Collect(ctx, true); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "admin", "fsck", "--mgmtd", strings.Join(c.MgmtdAddrs(), ","), "--token", c.Token); err != nil {
		t.Fatalf("fsck after the snapshot went: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "data/run/ckpt-1")); err != nil || len(b) != 2<<20 || string(b[1<<20:1<<20+11]) != "overwritten" {
		t.Fatalf("the live file after the snapshot went: %v (%d bytes)", err, len(b))
	}
}
