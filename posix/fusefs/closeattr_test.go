package fusefs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func statT(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

func (f *fileSystem) hasClosedAttr(ino uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.closedAttrs[ino]
	return ok
}

// TestClosedAttrs: the stat after a close is answered with the attributes
// the close brought back, and never with ones this mount changed since: a
// link and an unlink (nlink), a chmod, a second writer still writing.
func TestClosedAttrs(t *testing.T) {
	_, m := mountCluster(t, Options{})
	d := m.Dir()
	p := filepath.Join(d, "f")
	if err := os.WriteFile(p, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	ino := statT(t, p).Ino
	if m.fsys.hasClosedAttr(ino) {
		t.Error("the close's attributes were not taken by the first stat after it")
	}

	// A write and close again, then a link: the kernel asks for the
	// attributes again, and they must show the new link.
	if err := os.WriteFile(p, make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	if !m.fsys.hasClosedAttr(ino) {
		t.Fatal("a close here left no attributes for the next stat")
	}
	if err := os.Link(p, filepath.Join(d, "g")); err != nil {
		t.Fatal(err)
	}
	if st := statT(t, p); st.Nlink != 2 || st.Size != 8192 {
		t.Errorf("after a link: nlink %d size %d, want 2 and 8192", st.Nlink, st.Size)
	}
	if err := os.WriteFile(p, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(d, "g")); err != nil {
		t.Fatal(err)
	}
	if st := statT(t, p); st.Nlink != 1 || st.Size != 100 {
		t.Errorf("after an unlink: nlink %d size %d, want 1 and 100", st.Nlink, st.Size)
	}
	if err := os.WriteFile(p, make([]byte, 200), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if st := statT(t, p); st.Mode&0o777 != 0o600 {
		t.Errorf("after a chmod: mode %o, want 600", st.Mode&0o777)
	}

	// Two writers: the first close leaves nothing while the other writes.
	w1, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w1.WriteAt([]byte("a"), 0); err != nil {
		t.Fatal(err)
	}
	if err := w1.Close(); err != nil {
		t.Fatal(err)
	}
	if m.fsys.hasClosedAttr(ino) {
		t.Error("a close left attributes while another handle here writes the file")
	}
	if _, err := w2.WriteAt(make([]byte, 5000), 0); err != nil {
		t.Fatal(err)
	}
	if st := statT(t, p); st.Size != 5000 {
		t.Errorf("with a writer open: size %d, want 5000", st.Size)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if st := statT(t, p); st.Size != 5000 {
		t.Errorf("after both closed: size %d, want 5000", st.Size)
	}
}
