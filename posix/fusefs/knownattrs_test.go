package fusefs

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

func statT(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// answers reports whether the mount would answer ino's next GETATTR itself.
func (f *fileSystem) answers(ino uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.known[ino].answer
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
	if m.fsys.answers(ino) {
		t.Error("the close's attributes were not taken by the first stat after it")
	}

	// A write and close again, then a link: the kernel asks for the
	// attributes again, and they must show the new link.
	if err := os.WriteFile(p, make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	if !m.fsys.answers(ino) {
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
	if m.fsys.answers(ino) {
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

// TestDirAttrsFollowChanges: after each entry change through the mount, a
// stat of the directories it changed shows what metad holds (times, link
// count, mode), whether the mount followed the change or asked again; and
// for creates, unlinks and renames of files it answers without asking.
func TestDirAttrsFollowChanges(t *testing.T) {
	c, m := mountCluster(t, Options{})
	ctx := context.Background()
	d, e := filepath.Join(m.Dir(), "d"), filepath.Join(m.Dir(), "e")
	for _, p := range []string{d, e} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dIno, eIno := statT(t, d).Ino, statT(t, e).Ino
	same := func(step string, dir string, ino uint64) {
		t.Helper()
		got := statT(t, dir)
		want, err := c.FS().Meta().Stat(ctx, ino)
		if err != nil {
			t.Fatal(err)
		}
		if got.Mtim.Nano() != want.Mtime || got.Ctim.Nano() != want.Ctime || got.Mode&0o7777 != want.Mode&0o7777 {
			t.Errorf("%s: %s shows mtime %d ctime %d mode %o, metad holds %d %d %o", step, filepath.Base(dir),
				got.Mtim.Nano(), got.Ctim.Nano(), got.Mode&0o7777, want.Mtime, want.Ctime, want.Mode&0o7777)
		}
		if wantN := uint64(2); got.Nlink < wantN {
			t.Errorf("%s: %s shows nlink %d", step, filepath.Base(dir), got.Nlink)
		}
	}
	nlink := func(step, dir string, want uint64) {
		t.Helper()
		if got := statT(t, dir).Nlink; got != want {
			t.Errorf("%s: %s shows nlink %d, want %d", step, filepath.Base(dir), got, want)
		}
	}
	followed := func(step string, ino uint64) {
		t.Helper()
		if !m.fsys.answers(ino) {
			t.Errorf("%s: the mount did not follow the change of the directory", step)
		}
	}

	same("before", d, dIno)
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "h"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	same("chmod, then create", d, dIno)
	if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	followed("create", dIno)
	same("create", d, dIno)
	if err := os.Rename(filepath.Join(d, "f"), filepath.Join(d, "g")); err != nil {
		t.Fatal(err)
	}
	followed("rename in a directory", dIno)
	same("rename in a directory", d, dIno)
	same("warm e", e, eIno)
	if err := os.Rename(filepath.Join(d, "g"), filepath.Join(e, "g")); err != nil {
		t.Fatal(err)
	}
	followed("rename across directories", dIno)
	followed("rename across directories", eIno)
	same("rename across directories", d, dIno)
	same("rename across directories", e, eIno)
	if err := os.Remove(filepath.Join(e, "g")); err != nil {
		t.Fatal(err)
	}
	followed("unlink", eIno)
	same("unlink", e, eIno)

	// Directories made, moved and removed move link counts.
	if err := os.Mkdir(filepath.Join(d, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	same("mkdir", d, dIno)
	nlink("mkdir", d, 3)
	if err := os.Rename(filepath.Join(d, "sub"), filepath.Join(e, "sub")); err != nil {
		t.Fatal(err)
	}
	same("rename of a directory", d, dIno)
	same("rename of a directory", e, eIno)
	nlink("rename of a directory", d, 2)
	nlink("rename of a directory", e, 3)
	if err := os.Remove(filepath.Join(e, "sub")); err != nil {
		t.Fatal(err)
	}
	same("rmdir", e, eIno)
	nlink("rmdir", e, 2)
}

// TestKnownAttrsBounded: the table of kept attributes stays bounded, by
// dropping what is too old to answer, or when nothing is, everything.
func TestKnownAttrsBounded(t *testing.T) {
	f := &fileSystem{opts: Options{AttrTimeout: time.Hour}, known: map[uint64]knownAttr{}, opened: map[uint64]*openInode{}}
	fill := func() {
		clear(f.known)
		for i := range uint64(maxKnownAttrs) {
			f.noteDirAttr(metaapi.Inode{ID: i + 1, Type: metaapi.TypeDir})
		}
		if n := len(f.known); n != maxKnownAttrs {
			t.Fatalf("%d attributes kept, want %d", n, maxKnownAttrs)
		}
	}
	fill()
	f.noteDirAttr(metaapi.Inode{ID: 1 << 40, Type: metaapi.TypeDir})
	if n := len(f.known); n != 1 {
		t.Errorf("a full table of fresh attributes, one more: %d kept, want the new one only", n)
	}
	fill()
	f.known[1] = knownAttr{in: metaapi.Inode{ID: 1, Type: metaapi.TypeDir}, at: time.Now().Add(-2 * time.Hour)}
	f.noteDirAttr(metaapi.Inode{ID: 1 << 40, Type: metaapi.TypeDir})
	if _, old := f.known[1]; old || len(f.known) != maxKnownAttrs {
		t.Errorf("a full table with one too old to answer, one more: %d kept (the old one still: %v), want it replaced", len(f.known), old)
	}
}
