// Package conformance checks the flyfs FUSE mount against POSIX behaviour
// through real system calls on a live mount: errnos, renames, links,
// permissions as another user, and a randomized exerciser against a model.
// TestMain starts one in-process cluster (real Pebble and chunk engines) and
// mounts it for the whole package; tests skip when FUSE is unusable here.
package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/posix/fusefs"
)

var (
	mountDir   string     // the shared mount
	mountDir2  string     // a second mount of the same cluster, by another client (locks_test.go)
	clientFS   *client.FS // the mount's client, to read what the cluster holds
	skipReason string
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper(os.Args[1:]))
	}
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	os.Setenv("AWS_CA_BUNDLE", "")
	if _, err := os.Stat("/dev/fuse"); err != nil {
		skipReason = "no /dev/fuse: the conformance suite needs the fuse kernel module"
		return m.Run()
	}
	scratch, err := os.MkdirTemp("", "flyfs-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(scratch)
	// Small chunks, so ordinary test sizes cross chunk boundaries. Removed
	// files keep their chunks for metad's default grace, as on flyfs
	// server: a descriptor of an unlinked file reads from the cluster once
	// the kernel drops its pages, and must find the bytes there.
	c, err := cluster.Start(context.Background(), cluster.Config{Dir: filepath.Join(scratch, "cluster"), NoSync: true,
		Nodes: 1, Replicas: 1, Chains: 4, Metads: 1, ChunkSize: 64 << 10, Stripe: 4, GCGrace: 5 * time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance: setting up the cluster:", err)
		return 1
	}
	defer c.Close()
	// The mount point's parents must be searchable by the other user the
	// permission tests run as.
	mountDir = filepath.Join(scratch, "mnt")
	os.Chmod(scratch, 0o755)
	if err := os.Mkdir(mountDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fs, err := c.FS(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	clientFS = fs
	mnt, err := fusefs.Mount(context.Background(), fs, mountDir, fusefs.Options{AllowOther: true})
	if err != nil {
		if os.Getuid() != 0 {
			skipReason = fmt.Sprintf("cannot mount FUSE as a non-root user here: %v", err)
			return m.Run()
		}
		fmt.Fprintln(os.Stderr, "conformance: mount:", err)
		return 1
	}
	defer func() {
		if err := mnt.Unmount(); err != nil {
			fmt.Fprintln(os.Stderr, "conformance: unmount:", err)
			code = 1
		}
	}()
	// A second mount, as another host's would be: its own client, so its
	// own lock session.
	fs2, err := c.Dial(context.Background(), "second mount", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	defer fs2.Close()
	mountDir2 = filepath.Join(scratch, "mnt2")
	if err := os.Mkdir(mountDir2, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mnt2, err := fusefs.Mount(context.Background(), fs2, mountDir2, fusefs.Options{AllowOther: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance: second mount:", err)
		return 1
	}
	defer func() {
		if err := mnt2.Unmount(); err != nil {
			fmt.Fprintln(os.Stderr, "conformance: unmount the second mount:", err)
			code = 1
		}
	}()
	return m.Run()
}

// onSecond is p (in the first mount) as the second mount shows it.
func onSecond(t *testing.T, p string) string {
	t.Helper()
	rel, err := filepath.Rel(mountDir, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("%s is not in the mount", p)
	}
	return filepath.Join(mountDir2, rel)
}

// dir returns a fresh directory in the mount for one test.
//
// This process serves the mount, so a child it starts must not touch the
// mount before its exec: no exec.Cmd.Dir in the mount (pass the directory
// to the program, as git -C, tar -C) and no program on it. The child runs
// in the parent's memory until it execs, while the parent's thread holds
// its scheduler slot in the vfork; a garbage collection then waits for
// that slot to stop the world, so no goroutine answers the child's lookup
// and the test hangs for good (seen with cmd.Dir: the child's chdir waits
// for a LOOKUP, the parent in forkExec, another goroutine in gcStart).
func dir(t *testing.T) string {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	d, err := os.MkdirTemp(mountDir, t.Name()+"-")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// errnoOf returns the errno in err (0 for nil, 0xffff for an error
// without one).
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0xffff
}

// wantErrno fails unless err carries want.
func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if got := errnoOf(err); got != want {
		t.Errorf("%s: got %v (%v), want %v", what, got, err, want)
	}
}

func mustWrite(t *testing.T, p string, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// inCluster reads the file at p (a path in the mount) through the client,
// past the kernel's page cache: what another mount opening it now would
// read.
func inCluster(t *testing.T, p string) []byte {
	t.Helper()
	rel, err := filepath.Rel(mountDir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		t.Fatalf("%s is not in the mount", p)
	}
	ctx := context.Background()
	f, err := clientFS.Open(ctx, "/"+rel)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, f.Size())
	if n, err := f.ReadAtContext(ctx, b, 0); n != len(b) || (err != nil && err != io.EOF) {
		t.Fatalf("reading %s through the client: %d of %d bytes: %v", rel, n, len(b), err)
	}
	return b
}

// sameInCluster checks that every regular file under root (in the mount)
// holds, through the client, what the mount reads.
func sameInCluster(t *testing.T, root string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		n++
		if got, want := inCluster(t, p), []byte(mustRead(t, p)); !bytes.Equal(got, want) {
			t.Errorf("%s: the cluster holds %d bytes that differ from the %d the mount reads", p, len(got), len(want))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files under %s read the same through the client", n, filepath.Base(root))
}
