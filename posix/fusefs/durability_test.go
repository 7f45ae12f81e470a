package fusefs

import (
	"bytes"
	"context"
	"errors"
	"github.com/flyfs/flyfs/core/client"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/flyfs/flyfs/core/kv/pebblekv"
	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/metad/ns"
)

// TestFsyncMakesMountChangesDurable: the mount's namespace changes are
// acknowledged before they are durable, as a local file system's are, and
// fsync(2) of a file or of a directory makes them durable. metad's store is
// Pebble on an in-memory file system whose crash clone keeps what was
// synced: a machine crash.
func TestFsyncMakesMountChangesDurable(t *testing.T) {
	mem := vfs.NewCrashableMem()
	db, err := pebblekv.Open("meta", pebblekv.Options{FS: mem, SyncWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, m := mountClusterWith(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{SyncWindow: time.Hour}, MetaKV: db}, Options{})
	d := m.Dir()
	// unsynced reports whether the storage node holds relaxed writes.
	unsynced := func() bool {
		for _, e := range c.C.Storage(0).Engines() {
			if e.Stats().Unsynced {
				return true
			}
		}
		return false
	}

	// afterCrash reports what a machine crash now leaves at path: its
	// length, or -1 if it is gone.
	afterCrash := func(path string) int64 {
		t.Helper()
		crashed, err := pebblekv.Open("meta", pebblekv.Options{FS: mem.CrashClone(vfs.CrashCloneCfg{})})
		if err != nil {
			t.Fatalf("open the store after a crash: %v", err)
		}
		defer crashed.Close()
		n, err := ns.New(crashed, ns.Options{})
		if err != nil {
			t.Fatal(err)
		}
		in, err := n.Resolve(context.Background(), path, false)
		if errors.Is(err, ns.ErrNotExist) {
			return -1
		}
		if err != nil {
			t.Fatal(err)
		}
		return int64(in.Length)
	}

	if err := os.Mkdir(filepath.Join(d, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d, "dir", "f")
	// Larger than what a close keeps in the inode, so its bytes go to storage.
	data := bytes.Repeat([]byte("twelve bytes"), client.DefaultInlineMax/12+1)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := afterCrash("/dir/f"); n != -1 {
		t.Fatalf("a file written and closed (no fsync) survived a crash that keeps only synced bytes (length %d): the mount's changes are not relaxed", n)
	}
	if !unsynced() {
		t.Fatal("the file's bytes were synced on the storage node before any fsync: the mount's writes are not relaxed")
	}
	f, err := os.Open(p) // fsync through a read-only descriptor syncs too
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n := afterCrash("/dir/f"); n != int64(len(data)) {
		t.Fatalf("after fsync a crash leaves /dir/f with length %d, want %d", n, len(data))
	}
	if unsynced() {
		t.Fatal("after fsync the storage node still holds the file's bytes unsynced")
	}

	if err := os.Rename(p, filepath.Join(d, "dir", "g")); err != nil {
		t.Fatal(err)
	}
	if n := afterCrash("/dir/g"); n != -1 {
		t.Fatal("a rename not synced survived a crash that keeps only synced bytes")
	}
	dir, err := os.Open(filepath.Join(d, "dir"))
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.Sync(); err != nil {
		t.Fatal(err)
	}
	dir.Close()
	if n, old := afterCrash("/dir/g"), afterCrash("/dir/f"); n != int64(len(data)) || old != -1 {
		t.Fatalf("after fsync of the directory a crash leaves /dir/g at %d and /dir/f at %d, want %d and gone", n, old, len(data))
	}

	// A small file's bytes live in its inode: the metadata store's sync
	// makes them durable with it.
	small := filepath.Join(d, "dir", "small")
	if err := os.WriteFile(small, []byte("twelve bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := afterCrash("/dir/small"); n != -1 {
		t.Fatalf("a small file not synced survived a crash (length %d)", n)
	}
	if f, err = os.Open(small); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n := afterCrash("/dir/small"); n != 12 {
		t.Fatalf("after fsync a crash leaves /dir/small with length %d, want 12", n)
	}
}
