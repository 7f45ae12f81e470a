package conformance

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDirectoryLinkCount: a directory's nlink is 2 plus its subdirectories
// (their ".." entries), whatever else it holds; mkdir, rmdir and moving a
// directory keep both parents' counts exact.
func TestDirectoryLinkCount(t *testing.T) {
	d := dir(t)
	j := func(p string) string { return filepath.Join(d, p) }
	want := func(p string, n uint64) {
		t.Helper()
		if got := nlink(t, j(p)); got != n {
			t.Errorf("nlink of %s: %d, want %d", p, got, n)
		}
	}
	mkdirs(t, j("p"), j("q"))
	want("p", 2)
	want(".", 4)
	mkdirs(t, j("p/a"), j("p/b"), j("p/a/deep"))
	mustWrite(t, j("p/file"), "f")
	if err := os.Symlink("file", j("p/link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(j("p/fifo"), 0o644); err != nil {
		t.Logf("mkfifo: %v", err)
	}
	want("p", 4)
	want("p/a", 3)
	want("p/b", 2)

	// Moves between parents change both.
	if err := os.Rename(j("p/a"), j("q/a")); err != nil {
		t.Fatal(err)
	}
	want("p", 3)
	want("q", 3)
	want("q/a", 3)
	// A move inside one directory changes nothing; neither does a file's.
	if err := os.Rename(j("q/a"), j("q/a2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(j("p/file"), j("q/file")); err != nil {
		t.Fatal(err)
	}
	want("q", 3)
	want("p", 3)
	// rmdir drops the count.
	if err := syscall.Rmdir(j("p/b")); err != nil {
		t.Fatal(err)
	}
	want("p", 2)
	// A directory moved over an empty one replaces it: the destination
	// parent keeps its count, the source parent loses one.
	mkdirs(t, j("p/x"), j("q/y"))
	want("p", 3)
	want("q", 4)
	if err := syscall.Rename(j("p/x"), j("q/y")); err != nil {
		t.Fatal(err)
	}
	want("p", 2)
	want("q", 4)
	// Exchanging a directory with a file across parents moves one count.
	if err := unix.Renameat2(unix.AT_FDCWD, j("q/a2"), unix.AT_FDCWD, j("p/link"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	want("p", 3)
	want("q", 3)
	want("p/link", 3) // the directory (with deep) now named link
	// A whole tree removed.
	if err := os.RemoveAll(j("p/link")); err != nil {
		t.Fatal(err)
	}
	want("p", 2)
	// fstat of an open directory says the same.
	f, err := os.Open(j("q"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Nlink != 3 {
		t.Errorf("fstat of q: nlink %d (%v), want 3", st.Nlink, err)
	}
	if err := syscall.Rmdir(j("q/y")); err != nil {
		t.Fatal(err)
	}
	want("q", 2)
}
