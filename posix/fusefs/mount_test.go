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

	"golang.org/x/sys/unix"

	"github.com/flyfs/flyfs/e2e/harness"
)

// mountCluster starts a one-node cluster and mounts it; it skips when FUSE
// is not usable here.
func mountCluster(t *testing.T, opts Options) (*harness.FSCluster, *Mounted) {
	t.Helper()
	return mountClusterWith(t, harness.FSConfig{}, opts)
}

// mountClusterWith is mountCluster with cfg's settings (its nodes, replicas
// and chains are the one-node cluster's).
func mountClusterWith(t *testing.T, cfg harness.FSConfig, opts Options) (*harness.FSCluster, *Mounted) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: FUSE tests need the fuse kernel module")
	}
	t.Setenv("AWS_CA_BUNDLE", "")
	cfg.ClusterConfig = harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4, NoSync: true, SyncWindow: cfg.SyncWindow}
	c := harness.StartFS(t, cfg)
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

// TestClusterGoneFailsBounded: with the cluster's services down, calls
// through the mount fail with EIO after the op timeout instead of hanging,
// and work again once the services are back.
// dropPages lets go of the page cache of the file at p, so that the next
// read goes to the mount (a file written here stays cached).
func dropPages(t *testing.T, p string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

func TestClusterGoneFailsBounded(t *testing.T) {
	c, m := mountCluster(t, Options{OpTimeout: 2 * time.Second, AttrTimeout: -1, EntryTimeout: -1})
	d := m.Dir()
	p := filepath.Join(d, "f")
	if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	dropPages(t, p)
	c.KillMetad(0)
	c.Kill(0)
	// Each call must end on its own; the watchdog only turns a hang into a
	// failure instead of the package timeout.
	bounded := func(what string, op func() error) error {
		t.Helper()
		ch := make(chan error, 1)
		go func() { ch <- op() }()
		select {
		case err := <-ch:
			return err
		case <-time.After(60 * time.Second):
			t.Fatalf("%s hangs with the cluster gone", what)
			return nil
		}
	}
	if err := bounded("stat", func() error { _, err := os.Stat(p); return err }); !errors.Is(err, syscall.EIO) {
		t.Errorf("stat with metad gone: %v, want EIO", err)
	}
	if err := bounded("create", func() error { return os.WriteFile(filepath.Join(d, "g"), []byte("y"), 0o644) }); !errors.Is(err, syscall.EIO) {
		t.Errorf("create with metad gone: %v, want EIO", err)
	}
	if err := c.StartMetad(0); err != nil {
		t.Fatal(err)
	}
	// Metadata is back, storage is not: reading data fails with EIO.
	err := bounded("read", func() error {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.ReadAt(make([]byte, 4096), 1<<20)
		return err
	})
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("read with storage gone: %v, want EIO", err)
	}
	if err := c.Start(0); err != nil {
		t.Fatal(err)
	}
	// Recovery: the same calls work again once the services are back.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := os.ReadFile(p)
		if err == nil && len(got) == 3<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mount did not recover: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(d, "g"), []byte("y"), 0o644); err != nil {
		t.Fatalf("create after recovery: %v", err)
	}
}
