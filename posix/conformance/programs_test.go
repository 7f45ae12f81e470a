package conformance

import (
	"bytes"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Real programs on the mount: archive and copy tools round-trip a tree with
// modes, owners, times, links and special files through it.

// treeEntry is one entry of the test tree, made in this order.
type treeEntry struct {
	path     string
	kind     string // dir, file, symlink, hardlink, fifo, chr
	mode     os.FileMode
	uid, gid int
	data     string // file content; symlink or hardlink target
}

func testTree() []treeEntry {
	big := make([]byte, 300_000) // crosses the mount's 64 KiB chunks
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(r.UintN(256))
	}
	return []treeEntry{
		{path: "a", kind: "dir", mode: 0o755, uid: 0, gid: 0},
		{path: "a/b", kind: "dir", mode: 0o750, uid: 1234, gid: 5678},
		{path: "private", kind: "dir", mode: 0o700, uid: nobody, gid: nobody},
		{path: "shared", kind: "dir", mode: os.ModeSticky | 0o777, uid: 0, gid: 0},
		{path: "group", kind: "dir", mode: os.ModeSetgid | 0o2775, uid: 0, gid: 4321},
		{path: "a/hello.txt", kind: "file", mode: 0o644, uid: 1234, gid: 5678, data: "hello, world\n"},
		{path: "a/b/big.bin", kind: "file", mode: 0o600, uid: 1234, gid: 5678, data: string(big)},
		{path: "a/b/empty", kind: "file", mode: 0o640, uid: 0, gid: 0},
		{path: "private/secret", kind: "file", mode: 0o400, uid: nobody, gid: nobody, data: "s"},
		{path: "tool", kind: "file", mode: os.ModeSetuid | 0o755, uid: 0, gid: 0, data: "#!/bin/sh\n"},
		{path: "group/data", kind: "file", mode: 0o664, uid: 0, gid: 4321, data: "g"},
		{path: "shared/note", kind: "file", mode: 0o666, uid: nobody, gid: 0, data: "n"},
		{path: "a/link", kind: "symlink", uid: 1234, gid: 5678, data: "hello.txt"},
		{path: "dangling", kind: "symlink", uid: 0, gid: 0, data: "no/such/file"},
		{path: "a/b/hard", kind: "hardlink", data: "a/hello.txt"},
		{path: "pipe", kind: "fifo", mode: 0o620, uid: 1234, gid: 0},
		{path: "null", kind: "chr", mode: 0o666, uid: 0, gid: 0},
	}
}

// buildTree makes the test tree under root, with distinct old times
// (nanoseconds included), directories' last; it returns the tree as made
// (a device node the local file system refuses is left out).
func buildTree(t *testing.T, root string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var dirs []string
	for _, e := range testTree() {
		p := filepath.Join(root, e.path)
		switch e.kind {
		case "dir":
			must(os.Mkdir(p, 0o700))
			dirs = append(dirs, e.path)
		case "file":
			must(os.WriteFile(p, []byte(e.data), 0o600))
		case "symlink":
			must(os.Symlink(e.data, p))
		case "hardlink":
			must(os.Link(filepath.Join(root, e.data), p))
			continue
		case "fifo":
			must(syscall.Mkfifo(p, 0o600))
		case "chr":
			if err := unix.Mknod(p, syscall.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
				t.Logf("no device node in the tree: %v", err)
				continue
			}
		}
		must(os.Lchown(p, e.uid, e.gid))
		if e.kind != "symlink" {
			must(os.Chmod(p, e.mode)) // after chown, which clears set-id bits
		}
	}
	i := 0
	stamp := func(rel string) {
		i++
		tm := time.Unix(1_500_000_000+int64(i)*86_400, int64(i)*1_234_567)
		ts := []unix.Timespec{unix.NsecToTimespec(tm.UnixNano()), unix.NsecToTimespec(tm.UnixNano())}
		must(unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(root, rel), ts, unix.AT_SYMLINK_NOFOLLOW))
	}
	for _, e := range testTree() {
		if e.kind != "dir" && e.kind != "hardlink" {
			if _, err := os.Lstat(filepath.Join(root, e.path)); err == nil {
				stamp(e.path)
			}
		}
	}
	for k := len(dirs) - 1; k >= 0; k-- { // children first
		stamp(dirs[k])
	}
	stamp(".")
}

// compareTrees checks that dst holds what src holds: the same entries
// with the same type, mode, owner, mtime (to the nanosecond), size,
// content, symlink target and device number; with links, the same hard
// link counts of files.
func compareTrees(t *testing.T, src, dst string, links bool) {
	t.Helper()
	pastAttrCache()
	seen := map[string]bool{}
	err := filepath.WalkDir(src, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		seen[rel] = true
		var s, m unix.Stat_t
		if err := unix.Lstat(p, &s); err != nil {
			return err
		}
		if err := unix.Lstat(filepath.Join(dst, rel), &m); err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		if s.Mode != m.Mode {
			t.Errorf("%s: mode %o, want %o", rel, m.Mode, s.Mode)
		}
		if s.Uid != m.Uid || s.Gid != m.Gid {
			t.Errorf("%s: owner %d:%d, want %d:%d", rel, m.Uid, m.Gid, s.Uid, s.Gid)
		}
		if s.Mtim != m.Mtim {
			t.Errorf("%s: mtime %v, want %v", rel, time.Unix(m.Mtim.Unix()).UTC(), time.Unix(s.Mtim.Unix()).UTC())
		}
		switch s.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			a, err1 := os.ReadFile(p)
			b, err2 := os.ReadFile(filepath.Join(dst, rel))
			if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
				t.Errorf("%s: content differs (%d vs %d bytes; %v %v)", rel, len(b), len(a), err1, err2)
			}
			if links && s.Nlink != m.Nlink {
				t.Errorf("%s: nlink %d, want %d", rel, m.Nlink, s.Nlink)
			}
		case syscall.S_IFLNK:
			a, _ := os.Readlink(p)
			b, err := os.Readlink(filepath.Join(dst, rel))
			if a != b {
				t.Errorf("%s: symlink to %q (%v), want %q", rel, b, err, a)
			}
		case syscall.S_IFCHR, syscall.S_IFBLK:
			if s.Rdev != m.Rdev {
				t.Errorf("%s: device %d, want %d", rel, m.Rdev, s.Rdev)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(dst, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(dst, p); !seen[rel] {
			t.Errorf("%s: in the copy only", rel)
		}
		return nil
	})
}

func needTool(t *testing.T, name string) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("the round trips chown to other users: they need root")
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (scripts/test-deps.sh installs it)", name)
	}
	return p
}

func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("%s %s: %s", name, strings.Join(args, " "), stderr.String())
	}
	return stdout.String()
}

// TestTarRoundTrip: a tree archived on the local disk and extracted into
// the mount (as root: owners, modes, times kept) equals the original; so
// does the tree archived back out of the mount.
func TestTarRoundTrip(t *testing.T) {
	d := dir(t)
	tar := needTool(t, "tar")
	src := filepath.Join(t.TempDir(), "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	buildTree(t, src)
	archive := filepath.Join(t.TempDir(), "tree.tar")
	runTool(t, tar, "--format=posix", "-C", src, "-cf", archive, ".")
	dst := filepath.Join(d, "x")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	runTool(t, tar, "-C", dst, "-xpf", archive)
	compareTrees(t, src, dst, true)

	back := filepath.Join(t.TempDir(), "back")
	if err := os.Mkdir(back, 0o755); err != nil {
		t.Fatal(err)
	}
	archive2 := filepath.Join(t.TempDir(), "back.tar")
	runTool(t, tar, "--format=posix", "-C", dst, "-cf", archive2, ".")
	runTool(t, tar, "-C", back, "-xpf", archive2)
	compareTrees(t, src, back, true)
}

// TestCpArchiveRoundTrip: cp -a into the mount keeps everything, hard
// links included.
func TestCpArchiveRoundTrip(t *testing.T) {
	d := dir(t)
	cp := needTool(t, "cp")
	src := filepath.Join(t.TempDir(), "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	buildTree(t, src)
	dst := filepath.Join(d, "x")
	runTool(t, cp, "-a", src, dst)
	compareTrees(t, src, dst, true)
}

// TestRsyncTwice: rsync -a into the mount copies the tree; a second run
// finds nothing to do (sizes and mtimes kept, directories' too); after one
// file changes, a third run copies that file only.
func TestRsyncTwice(t *testing.T) {
	d := dir(t)
	rsync := needTool(t, "rsync")
	src := filepath.Join(t.TempDir(), "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	buildTree(t, src)
	dst := filepath.Join(d, "x")
	runTool(t, rsync, "-a", src+"/", dst+"/")
	compareTrees(t, src, dst, false)
	if out := runTool(t, rsync, "-a", "--itemize-changes", src+"/", dst+"/"); out != "" {
		t.Errorf("the second rsync -a changed things:\n%s", out)
	}
	p := filepath.Join(src, "group/data")
	if err := os.WriteFile(p, []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runTool(t, rsync, "-a", "--itemize-changes", src+"/", dst+"/")
	t.Logf("rsync -a after one change:\n%s", out)
	var files []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, ">f") {
			files = append(files, l)
		}
	}
	if len(files) != 1 || !strings.HasSuffix(files[0], " group/data") {
		t.Errorf("after one file changed, rsync sent:\n%s", out)
	}
	compareTrees(t, src, dst, false)
}
