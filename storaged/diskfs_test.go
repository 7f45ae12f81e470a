package storaged

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Two directories of one file system have one identity, its size and free
// space; another file system has another.
func TestStatDisk(t *testing.T) {
	a := t.TempDir()
	b := filepath.Join(a, "b")
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	sa, ok := statDisk(a)
	if !ok || sa.capacity == 0 || sa.free > sa.capacity || sa.fs == "" {
		t.Fatalf("statDisk(%s) = %+v, %v", a, sa, ok)
	}
	// As df counts: capacity - free is its Used (f_blocks - f_bfree), in
	// whole blocks.
	var st unix.Statfs_t
	if err := unix.Statfs(a, &st); err != nil {
		t.Fatal(err)
	}
	if used, dfUsed := sa.capacity-sa.free, (st.Blocks-st.Bfree)*uint64(st.Frsize); used > dfUsed+64<<20 || used+64<<20 < dfUsed {
		t.Errorf("used %d, df's %d", used, dfUsed)
	}
	sb, _ := statDisk(b)
	if sb.fs != sa.fs || sb.capacity != sa.capacity {
		t.Errorf("one file system, two identities: %+v and %+v", sa, sb)
	}
	for _, other := range []string{"/proc", "/dev/shm", "/sys"} {
		so, ok := statDisk(other)
		if !ok {
			continue
		}
		if so.fs == sa.fs {
			t.Errorf("%s and %s have one identity %q", other, a, so.fs)
		}
	}
	if _, ok := statDisk(filepath.Join(a, "missing")); ok {
		t.Error("statDisk of a missing directory succeeded")
	}
}
