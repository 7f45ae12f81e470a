package fusefs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/e2e/harness"
)

// mountCluster starts a one-node cluster and mounts it; it skips when FUSE
// is not usable here.
func mountCluster(t *testing.T, opts Options) (*harness.FSCluster, *Mounted) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: FUSE tests need the fuse kernel module")
	}
	t.Setenv("AWS_CA_BUNDLE", "")
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4, NoSync: true}})
	dir := t.TempDir()
	opts.AllowOther = true
	m, err := Mount(context.Background(), c.FS(), dir, opts)
	if err != nil {
		if errors.Is(err, syscall.EPERM) || os.Getuid() != 0 {
			t.Skipf("cannot mount FUSE here: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return c, m
}

func TestMountBasics(t *testing.T) {
	_, m := mountCluster(t, Options{})
	d := m.Dir()
	p := filepath.Join(d, "a.txt")
	if err := os.WriteFile(p, []byte("hello flyfs"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "hello flyfs" {
		t.Fatalf("read back %q, %v", got, err)
	}
	if err := os.MkdirAll(filepath.Join(d, "x/y/z"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p, filepath.Join(d, "x/y/b.txt")); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(d, "x/y"))
	if err != nil || len(ents) != 2 || ents[0].Name() != "b.txt" || ents[1].Name() != "z" {
		t.Fatalf("readdir: %v, %v", ents, err)
	}
	st, err := os.Stat(filepath.Join(d, "x/y/b.txt"))
	if err != nil || st.Size() != 11 || st.Mode().Perm() != 0o644 {
		t.Fatalf("stat: %v, %v", st, err)
	}
	// Big sequential write and read back.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	start := time.Now()
	if err := os.WriteFile(filepath.Join(d, "big"), big, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = os.ReadFile(filepath.Join(d, "big"))
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("big file differs (%d bytes, %v)", len(got), err)
	}
	t.Logf("4 MiB write+read in %v", time.Since(start))
}
