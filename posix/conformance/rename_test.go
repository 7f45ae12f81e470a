package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func ino(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func nlink(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return uint64(st.Nlink)
}

func mkdirs(t *testing.T, ps ...string) {
	t.Helper()
	for _, p := range ps {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRenameEdgeCases(t *testing.T) {
	d := dir(t)
	j := func(p string) string { return filepath.Join(d, p) }

	// Over an existing file: the target now is the source's inode and data.
	mustWrite(t, j("a"), "AAA")
	mustWrite(t, j("b"), "BBBB")
	ia := ino(t, j("a"))
	if err := os.Rename(j("a"), j("b")); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, j("b")); got != "AAA" || ino(t, j("b")) != ia {
		t.Errorf("rename over a file: b holds %q", got)
	}
	_, err := os.Stat(j("a"))
	wantErrno(t, "the source after rename", err, syscall.ENOENT)

	// A directory over an empty directory works; over a non-empty one not.
	mkdirs(t, j("d1/x"), j("d2"), j("d3/y"))
	// (syscall.Rename: os.Rename refuses a directory destination itself.)
	if err := syscall.Rename(j("d1"), j("d2")); err != nil {
		t.Fatalf("dir over an empty dir: %v", err)
	}
	if _, err := os.Stat(j("d2/x")); err != nil {
		t.Errorf("moved dir lost its child: %v", err)
	}
	wantErrno(t, "dir over a non-empty dir", syscall.Rename(j("d2"), j("d3")), syscall.ENOTEMPTY)
	// Type mismatches.
	mustWrite(t, j("f"), "f")
	wantErrno(t, "dir over a file", syscall.Rename(j("d3"), j("f")), syscall.ENOTDIR)
	wantErrno(t, "file over a dir", syscall.Rename(j("f"), j("d3")), syscall.EISDIR)
	// Into its own subtree.
	wantErrno(t, "dir into its own subtree", syscall.Rename(j("d3"), j("d3/y/z")), syscall.EINVAL)
	wantErrno(t, "dir onto its own child", syscall.Rename(j("d3"), j("d3/y")), syscall.EINVAL)
	// Renaming onto itself is a no-op.
	if err := os.Rename(j("f"), j("f")); err != nil || mustRead(t, j("f")) != "f" {
		t.Errorf("rename onto itself: %v", err)
	}
	// Across directories, keeping the inode.
	ifile := ino(t, j("f"))
	if err := os.Rename(j("f"), j("d3/y/f2")); err != nil || ino(t, j("d3/y/f2")) != ifile {
		t.Errorf("rename across dirs: %v", err)
	}

	// RENAME_NOREPLACE and RENAME_EXCHANGE.
	mustWrite(t, j("p"), "P")
	mustWrite(t, j("q"), "Q")
	err = unix.Renameat2(unix.AT_FDCWD, j("p"), unix.AT_FDCWD, j("q"), unix.RENAME_NOREPLACE)
	wantErrno(t, "RENAME_NOREPLACE onto an existing file", err, syscall.EEXIST)
	if err := unix.Renameat2(unix.AT_FDCWD, j("p"), unix.AT_FDCWD, j("p2"), unix.RENAME_NOREPLACE); err != nil {
		t.Errorf("RENAME_NOREPLACE to a free name: %v", err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, j("p2"), unix.AT_FDCWD, j("q"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatalf("RENAME_EXCHANGE: %v", err)
	}
	if mustRead(t, j("p2")) != "Q" || mustRead(t, j("q")) != "P" {
		t.Errorf("RENAME_EXCHANGE did not swap: p2=%q q=%q", mustRead(t, j("p2")), mustRead(t, j("q")))
	}
	// Exchange a file and a directory.
	if err := unix.Renameat2(unix.AT_FDCWD, j("q"), unix.AT_FDCWD, j("d2"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatalf("RENAME_EXCHANGE file<->dir: %v", err)
	}
	if st, err := os.Stat(j("q")); err != nil || !st.IsDir() {
		t.Errorf("after exchange q should be the dir: %v %v", st, err)
	}
	if mustRead(t, j("d2")) != "P" {
		t.Errorf("after exchange d2 should be the file")
	}
	err = unix.Renameat2(unix.AT_FDCWD, j("missing"), unix.AT_FDCWD, j("q"), unix.RENAME_EXCHANGE)
	wantErrno(t, "RENAME_EXCHANGE with a missing source", err, syscall.ENOENT)
	err = unix.Renameat2(unix.AT_FDCWD, j("q"), unix.AT_FDCWD, j("missing"), unix.RENAME_EXCHANGE)
	wantErrno(t, "RENAME_EXCHANGE with a missing target", err, syscall.ENOENT)
	err = unix.Renameat2(unix.AT_FDCWD, j("p2"), unix.AT_FDCWD, j("q"), unix.RENAME_EXCHANGE|unix.RENAME_NOREPLACE)
	wantErrno(t, "RENAME_EXCHANGE|RENAME_NOREPLACE", err, syscall.EINVAL)

	// A file renamed while open keeps being readable and writable.
	fh, err := os.OpenFile(j("p2"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(j("p2"), j("moved")); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("Z"), 1); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	if got := mustRead(t, j("moved")); got != "QZ" {
		t.Errorf("file written after a rename holds %q", got)
	}
}

func TestHardLinks(t *testing.T) {
	d := dir(t)
	j := func(p string) string { return filepath.Join(d, p) }
	mustWrite(t, j("f"), "linked")
	if n := nlink(t, j("f")); n != 1 {
		t.Fatalf("new file has nlink %d", n)
	}
	mkdirs(t, j("sub"))
	if err := os.Link(j("f"), j("g")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(j("f"), j("sub/h")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"f", "g", "sub/h"} {
		if n := nlink(t, j(p)); n != 3 {
			t.Errorf("%s: nlink %d, want 3", p, n)
		}
	}
	if ino(t, j("g")) != ino(t, j("f")) || ino(t, j("sub/h")) != ino(t, j("f")) {
		t.Error("links have different inode numbers")
	}
	// Write through one name, read through another.
	if err := os.WriteFile(j("g"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, j("sub/h")); got != "changed" {
		t.Errorf("through another link: %q", got)
	}
	if err := os.Remove(j("f")); err != nil {
		t.Fatal(err)
	}
	if n := nlink(t, j("g")); n != 2 {
		t.Errorf("after unlink: nlink %d, want 2", n)
	}
	// Rename one link over another link of the same inode: nothing changes
	// (POSIX: both names stay).
	if err := os.Rename(j("g"), j("sub/h")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(j("g")); err != nil {
		t.Errorf("rename of a link onto a link of the same file removed the source: %v", err)
	}
	if err := os.Remove(j("g")); err != nil {
		t.Fatal(err)
	}
	if n := nlink(t, j("sub/h")); n != 1 {
		t.Errorf("last link: nlink %d, want 1", n)
	}
	if got := mustRead(t, j("sub/h")); got != "changed" {
		t.Errorf("last link reads %q", got)
	}
	// Directories report at least one link (flyfs, like btrfs, does not
	// count subdirectories: tools treat 1 as "unknown").
	mkdirs(t, j("sub/child"))
	if n := nlink(t, j("sub")); n < 1 {
		t.Errorf("dir nlink %d", n)
	}
}

func TestSymlinks(t *testing.T) {
	d := dir(t)
	j := func(p string) string { return filepath.Join(d, p) }
	mustWrite(t, j("target"), "T")
	if err := os.Symlink("target", j("ln")); err != nil {
		t.Fatal(err)
	}
	if got, err := os.Readlink(j("ln")); err != nil || got != "target" {
		t.Fatalf("readlink: %q %v", got, err)
	}
	if got := mustRead(t, j("ln")); got != "T" {
		t.Errorf("read through a symlink: %q", got)
	}
	st, err := os.Lstat(j("ln"))
	if err != nil || st.Mode()&os.ModeSymlink == 0 || st.Size() != int64(len("target")) {
		t.Errorf("lstat: %v %v", st, err)
	}
	if err := os.Symlink("nowhere", j("dangling")); err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(j("dangling"))
	wantErrno(t, "stat of a dangling symlink", err, syscall.ENOENT)
	// A symlink to a directory works as a path component.
	mkdirs(t, j("realdir"))
	mustWrite(t, j("realdir/in"), "I")
	if err := os.Symlink(j("realdir"), j("dirlink")); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, j("dirlink/in")); got != "I" {
		t.Errorf("through a dir symlink: %q", got)
	}
	// A long target (up to PATH_MAX) survives.
	long := string(bytes.Repeat([]byte("x/"), 2000))
	if err := os.Symlink(long, j("longlink")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.Readlink(j("longlink")); got != long {
		t.Errorf("long target came back as %d bytes", len(got))
	}
}

func TestAttributes(t *testing.T) {
	d := dir(t)
	f := filepath.Join(d, "f")
	mustWrite(t, f, "x")
	if err := os.Chmod(f, 0o640); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(f); st.Mode().Perm() != 0o640 {
		t.Errorf("chmod: mode %v", st.Mode())
	}
	if os.Getuid() == 0 {
		if err := os.Chown(f, 1234, 5678); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		syscall.Stat(f, &st)
		if st.Uid != 1234 || st.Gid != 5678 {
			t.Errorf("chown: %d:%d", st.Uid, st.Gid)
		}
	}
	when := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
	if err := os.Chtimes(f, when, when); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(f)
	if !st.ModTime().Equal(when) {
		t.Errorf("mtime %v, want %v", st.ModTime(), when)
	}
	// Writing moves mtime forward again.
	if err := os.WriteFile(f, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(f); !st.ModTime().After(when) {
		t.Errorf("mtime after a write: %v", st.ModTime())
	}
	// Creating a file in a directory changes the directory's mtime.
	var before syscall.Stat_t
	syscall.Stat(d, &before)
	time.Sleep(10 * time.Millisecond)
	mustWrite(t, filepath.Join(d, "new"), "")
	// The kernel may cache the directory's attributes; a fresh lookup path
	// through stat after the attribute timeout shows the change.
	deadline := time.Now().Add(3 * time.Second)
	for {
		var after syscall.Stat_t
		syscall.Stat(d, &after)
		if after.Mtim.Nano() > before.Mtim.Nano() {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("dir mtime did not move after a create")
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// umask applies to creates.
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	mustWrite(t, filepath.Join(d, "masked"), "")
	if st, _ := os.Stat(filepath.Join(d, "masked")); st.Mode().Perm() != 0o640 {
		t.Errorf("umask 027 on 0644: mode %v", st.Mode().Perm())
	}
}
