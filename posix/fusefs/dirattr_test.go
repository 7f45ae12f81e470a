package fusefs

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func (f *fileSystem) dirAttrChanged(ino uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dirAttrs[ino].changed
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
		if !m.fsys.dirAttrChanged(ino) {
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
