package conformance

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// otherGroup is a group neither root's files nor the helper belong to.
const otherGroup = 12345

func modeOf(t *testing.T, p string) uint32 {
	t.Helper()
	st := lstat(t, p)
	return st.Mode
}

// TestSetIDBits: a write or truncate by another user, and a chown, clear
// set-user-id (and set-group-id when the group may execute); an entry
// created in a set-group-id directory takes the directory's group, and a
// directory created there is set-group-id too.
func TestSetIDBits(t *testing.T) {
	d := dir(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run a helper as another user")
	}
	j := func(p string) string { return filepath.Join(d, p) }
	os.Chmod(d, 0o755)
	mk := func(p string, mode os.FileMode) {
		t.Helper()
		mustWrite(t, j(p), "0123456789")
		if err := os.Chmod(j(p), mode); err != nil {
			t.Fatal(err)
		}
	}
	const rwx = 0o777
	mk("w", os.ModeSetuid|os.ModeSetgid|rwx)           // written by nobody
	mk("wnogx", os.ModeSetuid|os.ModeSetgid|0o767)     // group may not execute: SGID stays
	mk("t", os.ModeSetuid|os.ModeSetgid|rwx)           // truncated by nobody
	mk("otrunc", os.ModeSetuid|os.ModeSetgid|rwx)      // opened with O_TRUNC by nobody
	mk("chown", os.ModeSetuid|os.ModeSetgid|0o755)     // chowned by root
	mk("chownnogx", os.ModeSetuid|os.ModeSetgid|0o745) // chowned; SGID without group exec stays
	mk("rootwrite", os.ModeSetuid|os.ModeSetgid|rwx)   // written by root (CAP_FSETID): kept
	if err := os.Mkdir(j("sg"), 0o777); err != nil {   // a set-group-id directory
		t.Fatal(err)
	}
	if err := os.Chmod(j("sg"), os.ModeSetgid|0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(j("sg"), 0, otherGroup); err != nil {
		t.Fatal(err)
	}

	got := asNobody(t, helperBinary(t), []helperOp{
		{Op: "write", Path: j("w"), Arg: "x"},
		{Op: "write", Path: j("wnogx"), Arg: "x"},
		{Op: "truncate", Path: j("t")},
		{Op: "create", Path: j("otrunc"), Arg: "y"},
		{Op: "create", Path: j("sg/byother"), Arg: "n"},
		{Op: "mkdir", Path: j("sg/otherdir")},
		{Op: "mkfifo", Path: j("sg/otherfifo")},
		{Op: "symlink", Path: j("sg/otherlink")},
	})
	for i, e := range got {
		if e != 0 {
			t.Fatalf("helper op %d: %v", i, e)
		}
	}
	if err := os.Chown(j("chown"), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(j("chownnogx"), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if f, err := os.OpenFile(j("rootwrite"), os.O_WRONLY, 0); err != nil {
		t.Fatal(err)
	} else {
		f.WriteString("root")
		f.Close()
	}
	pastAttrCache() // what the cluster holds, not what the kernel cached
	for _, c := range []struct {
		p    string
		want uint32
	}{
		{"w", syscall.S_IFREG | rwx},
		{"wnogx", syscall.S_IFREG | syscall.S_ISGID | 0o767},
		{"t", syscall.S_IFREG | rwx},
		{"otrunc", syscall.S_IFREG | rwx},
		{"chown", syscall.S_IFREG | 0o755},
		{"chownnogx", syscall.S_IFREG | syscall.S_ISGID | 0o745},
		{"rootwrite", syscall.S_IFREG | syscall.S_ISUID | syscall.S_ISGID | rwx},
	} {
		if m := modeOf(t, j(c.p)); m != c.want {
			t.Errorf("%s: mode %o, want %o", c.p, m, c.want)
		}
	}
	if got := mustRead(t, j("w")); got != "x123456789" {
		t.Errorf("the written file holds %q", got)
	}

	// SGID inheritance, for root and for another user.
	mustWrite(t, j("sg/byroot"), "r")
	if err := os.Mkdir(j("sg/rootdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(j("sg/rootfifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	mkdirs(t, j("sg/rootdir/nested"))
	pastAttrCache()
	for _, c := range []struct {
		p      string
		uid    uint32
		sgid   bool
		isLink bool
	}{
		{"sg/byroot", 0, false, false},
		{"sg/rootdir", 0, true, false},
		{"sg/rootdir/nested", 0, true, false},
		{"sg/rootfifo", 0, false, false},
		{"sg/byother", nobody, false, false},
		{"sg/otherdir", nobody, true, false},
		{"sg/otherfifo", nobody, false, false},
		{"sg/otherlink", nobody, false, true},
	} {
		st := lstat(t, j(c.p))
		if st.Uid != c.uid || st.Gid != otherGroup {
			t.Errorf("%s: owner %d:%d, want %d:%d", c.p, st.Uid, st.Gid, c.uid, otherGroup)
		}
		if got := st.Mode&syscall.S_ISGID != 0; got != c.sgid && !c.isLink {
			t.Errorf("%s: mode %o, set-group-id %v, want %v", c.p, st.Mode, got, c.sgid)
		}
	}
	// Outside a set-group-id directory a new entry has the creator's group.
	mustWrite(t, j("plain"), "p")
	if st := lstat(t, j("plain")); st.Gid != 0 {
		t.Errorf("a file made by root outside sg has group %d", st.Gid)
	}
}
