package conformance

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenUnlinkedFile: fstat on a descriptor whose file lost its last name
// reports nlink 0 (and one less while other names remain); the data stays
// readable and, for a writer, writable.
func TestOpenUnlinkedFile(t *testing.T) {
	d := dir(t)
	j := func(p string) string { return filepath.Join(d, p) }
	fstatNlink := func(f *os.File) uint64 {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatalf("fstat %s: %v", f.Name(), err)
		}
		return uint64(st.Nlink)
	}

	mustWrite(t, j("r"), "read me")
	r, err := os.Open(j("r"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.OpenFile(j("w"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString("before "); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, j("h"), "two names")
	if err := os.Link(j("h"), j("h2")); err != nil {
		t.Fatal(err)
	}
	h, err := os.Open(j("h"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	for _, p := range []string{"r", "w", "h"} {
		if err := os.Remove(j(p)); err != nil {
			t.Fatal(err)
		}
	}
	if n := fstatNlink(r); n != 0 {
		t.Errorf("read-only descriptor of an unlinked file: nlink %d, want 0", n)
	}
	if n := fstatNlink(w); n != 0 {
		t.Errorf("write descriptor of an unlinked file: nlink %d, want 0", n)
	}
	if n := fstatNlink(h); n != 1 {
		t.Errorf("descriptor of a file with one name left: nlink %d, want 1", n)
	}
	buf := make([]byte, 64)
	if n, err := r.ReadAt(buf, 0); string(buf[:n]) != "read me" {
		t.Errorf("read of the unlinked file: %q %v", buf[:n], err)
	}
	if _, err := w.WriteString("after"); err != nil {
		t.Errorf("write to the unlinked file: %v", err)
	}
	if n, err := w.ReadAt(buf, 0); string(buf[:n]) != "before after" {
		t.Errorf("read back from the unlinked file: %q %v", buf[:n], err)
	}
	if err := os.Remove(j("h2")); err != nil {
		t.Fatal(err)
	}
	if n := fstatNlink(h); n != 0 {
		t.Errorf("after the last name went: nlink %d, want 0", n)
	}
}
