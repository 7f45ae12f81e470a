package ns

import "testing"

// TestChangeAnswers: Unlink and Rename answer the time their directories
// changed at, which Stat then reports as their mtime and ctime, and whether a
// directory's subdirectory count changed; a rename that changes nothing
// answers no time.
func TestChangeAnswers(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	for _, p := range []string{"/a", "/b"} {
		if _, err := e.mkdir(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/a/f", "/a/g"} {
		if _, err := e.create(p, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.mkdir("/a/d"); err != nil {
		t.Fatal(err)
	}
	a, _ := e.ino("/a")
	b, _ := e.ino("/b")
	dirTimes := func(ino uint64) (int64, int64) {
		in, err := e.ns.Stat(ctx, ino)
		if err != nil {
			t.Fatal(err)
		}
		return in.Mtime, in.Ctime
	}

	c, err := e.ns.UnlinkChange(ctx, RemoveRequest{Parent: a, Name: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if m, ct := dirTimes(a); c.DirTime == 0 || c.Subdirs || m != c.DirTime || ct != c.DirTime {
		t.Errorf("unlink of a file: answered %+v; the parent's mtime %d ctime %d", c, m, ct)
	}

	c, err = e.ns.RenameChange(ctx, RenameRequest{SrcParent: a, SrcName: "g", DstParent: b, DstName: "g"})
	if err != nil {
		t.Fatal(err)
	}
	ma, _ := dirTimes(a)
	mb, _ := dirTimes(b)
	if c.DirTime == 0 || c.Subdirs || ma != c.DirTime || mb != c.DirTime {
		t.Errorf("rename of a file across directories: answered %+v; the parents' mtimes %d and %d", c, ma, mb)
	}

	c, err = e.ns.RenameChange(ctx, RenameRequest{SrcParent: a, SrcName: "d", DstParent: b, DstName: "d"})
	if err != nil {
		t.Fatal(err)
	}
	if c.DirTime == 0 || !c.Subdirs {
		t.Errorf("rename of a directory across directories: answered %+v, want a time and Subdirs", c)
	}

	c, err = e.ns.RenameChange(ctx, RenameRequest{SrcParent: b, SrcName: "g", DstParent: b, DstName: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if c.DirTime != 0 {
		t.Errorf("a rename onto itself changes nothing, yet answered %+v", c)
	}
}
