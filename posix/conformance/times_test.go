package conformance

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func lstat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func nsOf(ts unix.Timespec) int64 { return ts.Nano() }

// futimens sets a descriptor's times (utimensat(fd, NULL, ...)), as tar
// does before it closes a file it extracted.
func futimens(f *os.File, atime, mtime time.Time) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, f.Fd(), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// tick sleeps long enough that the next change has a later timestamp.
func tick() { time.Sleep(15 * time.Millisecond) }

// pastAttrCache waits until the kernel no longer trusts the attributes it
// cached (the mount's attribute timeout, 1 s), so the next stat shows what
// the cluster holds, as a later reader or another mount would see it.
func pastAttrCache() { time.Sleep(1100 * time.Millisecond) }

// TestExplicitTimesSurviveClose: times set with futimens or utimensat while
// the file is still open for writing are the ones it keeps after close (the
// close of a write session does not overwrite them); a write after them
// moves mtime again.
func TestExplicitTimesSurviveClose(t *testing.T) {
	d := dir(t)
	j := func(p string) string { return filepath.Join(d, p) }
	atime := time.Unix(1_000_000_000, 111)
	mtime := time.Unix(1_100_000_000, 222_333_444)
	var checks []func()
	check := func(p string, at, mt time.Time) {
		checks = append(checks, func() {
			st := lstat(t, j(p))
			if nsOf(st.Mtim) != mt.UnixNano() || nsOf(st.Atim) != at.UnixNano() {
				t.Errorf("%s: atime %v mtime %v, want %v and %v", p, time.Unix(0, nsOf(st.Atim)), time.Unix(0, nsOf(st.Mtim)), at, mt)
			}
		})
	}
	cases := []struct {
		name string
		set  func(f *os.File, p string) error
	}{
		{"futimens", func(f *os.File, p string) error { return futimens(f, atime, mtime) }},
		{"utimensat", func(f *os.File, p string) error { return os.Chtimes(p, atime, mtime) }},
	}
	for _, c := range cases {
		// As tar extracts: create, write, set the times, close.
		f, err := os.OpenFile(j(c.name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(make([]byte, 200_000)); err != nil { // several chunks
			t.Fatal(err)
		}
		if err := c.set(f, j(c.name)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		check(c.name, atime, mtime)
	}
	// Times set on a second descriptor while a writer is open.
	w, err := os.OpenFile(j("two"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("data"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(j("two"), atime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	check("two", atime, mtime)
	// A write after the times were set moves mtime to now.
	f, err := os.OpenFile(j("later"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("first")
	if err := futimens(f, atime, mtime); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	f.WriteString(" and more")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// A directory keeps an explicit mtime until its entries change.
	mkdirs(t, j("sub"), j("sub2"))
	mustWrite(t, j("sub/x"), "x")
	mustWrite(t, j("sub2/x"), "x")
	for _, p := range []string{"sub", "sub2"} {
		if err := os.Chtimes(j(p), atime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	check("sub", atime, mtime)
	mustWrite(t, j("sub2/y"), "y")

	pastAttrCache()
	for _, c := range checks {
		c()
	}
	for _, p := range []string{"futimens", "utimensat", "two"} {
		if st := lstat(t, j(p)); st.Size == 0 {
			t.Errorf("%s: size %d", p, st.Size)
		}
	}
	if st := lstat(t, j("later")); nsOf(st.Mtim) < start.Add(-time.Second).UnixNano() {
		t.Errorf("a write after futimens left mtime at %v", time.Unix(0, nsOf(st.Mtim)))
	}
	if st := lstat(t, j("sub2")); nsOf(st.Mtim) <= mtime.UnixNano() {
		t.Errorf("a create in a directory with an explicit mtime left it at %v", time.Unix(0, nsOf(st.Mtim)))
	}
}

// TestCtimeMoves: every change of an inode moves its ctime; every change of
// a directory's entries moves its mtime and ctime.
func TestCtimeMoves(t *testing.T) {
	d := dir(t)
	j := func(p string) string { return filepath.Join(d, p) }
	ops := []struct {
		name string
		do   func(p string) error
	}{
		{"chmod", func(p string) error { return os.Chmod(p, 0o600) }},
		{"chown", func(p string) error { return os.Chown(p, nobody, nobody) }},
		{"link", func(p string) error { return os.Link(p, p+".2") }},
		{"unlink of another name", func(p string) error {
			if err := os.Link(p, p+".2"); err != nil {
				return err
			}
			tick()
			return os.Remove(p + ".2")
		}},
		{"rename", func(p string) error {
			if err := os.Rename(p, p+".moved"); err != nil {
				return err
			}
			return os.Symlink(filepath.Base(p)+".moved", p) // stat p follows it
		}},
		{"truncate", func(p string) error { return os.Truncate(p, 1) }},
		{"ftruncate", func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(100)
		}},
		{"write", func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			if _, err := f.WriteAt([]byte("w"), 2); err != nil {
				return err
			}
			return f.Close()
		}},
		{"utimes", func(p string) error { return os.Chtimes(p, time.Unix(5, 0), time.Unix(5, 0)) }},
	}
	// Entry changes of a directory: each in a directory of its own.
	dirOps := []struct {
		name string
		do   func(dir string) error
	}{
		{"create", func(dir string) error { return os.WriteFile(dir+"/new", nil, 0o644) }},
		{"mkdir", func(dir string) error { return os.Mkdir(dir+"/newdir", 0o755) }},
		{"mkfifo", func(dir string) error { return syscall.Mkfifo(dir+"/fifo", 0o644) }},
		{"symlink", func(dir string) error { return os.Symlink("keep", dir+"/sl") }},
		{"link", func(dir string) error { return os.Link(dir+"/keep", dir+"/hard") }},
		{"unlink", func(dir string) error { return os.Remove(dir + "/keep") }},
		{"rmdir", func(dir string) error { return syscall.Rmdir(dir + "/keepdir") }},
		{"rename inside", func(dir string) error { return os.Rename(dir+"/keep", dir+"/keep2") }},
		{"rename in", func(dir string) error { return os.Rename(dir+".in", dir+"/in") }},
		{"rename out", func(dir string) error { return os.Rename(dir+"/keep", dir+".out") }},
		{"rename a directory out", func(dir string) error { return os.Rename(dir+"/keepdir", dir+".outdir") }},
		{"setattr of an entry (no change)", nil},
	}
	type probe struct {
		what, path  string
		before      unix.Stat_t
		wantMtime   bool
		wantNoMtime bool
	}
	var probes []probe
	for _, op := range ops {
		p := j(op.name)
		mustWrite(t, p, "some data")
		before := lstat(t, p)
		tick()
		if err := op.do(p); err != nil {
			t.Errorf("%s: %v", op.name, err)
			continue
		}
		probes = append(probes, probe{what: op.name, path: p, before: before,
			wantMtime: op.name == "write" || op.name == "truncate" || op.name == "ftruncate"})
	}
	for _, op := range dirOps {
		dd := j("dir-" + op.name)
		mkdirs(t, dd, dd+"/keepdir")
		mustWrite(t, dd+"/keep", "k")
		mustWrite(t, dd+".in", "i")
		before := lstat(t, dd)
		tick()
		if op.do == nil { // a chmod of an entry is no entry change
			if err := os.Chmod(dd+"/keep", 0o600); err != nil {
				t.Fatal(err)
			}
			probes = append(probes, probe{what: "directory, " + op.name, path: dd, before: before, wantNoMtime: true})
			continue
		}
		if err := op.do(dd); err != nil {
			t.Errorf("%s in a directory: %v", op.name, err)
			continue
		}
		probes = append(probes, probe{what: "directory, " + op.name, path: dd, before: before, wantMtime: true})
	}
	pastAttrCache()
	for _, pr := range probes {
		var after unix.Stat_t
		if err := unix.Stat(pr.path, &after); err != nil {
			t.Fatal(err)
		}
		b, a := pr.before, after
		switch {
		case pr.wantNoMtime:
			if nsOf(a.Mtim) != nsOf(b.Mtim) || nsOf(a.Ctim) != nsOf(b.Ctim) {
				t.Errorf("%s: times moved", pr.what)
			}
			continue
		case nsOf(a.Ctim) <= nsOf(b.Ctim):
			t.Errorf("%s: ctime stayed at %v", pr.what, time.Unix(0, nsOf(b.Ctim)))
		}
		if pr.wantMtime && nsOf(a.Mtim) <= nsOf(b.Mtim) {
			t.Errorf("%s: mtime stayed at %v", pr.what, time.Unix(0, nsOf(b.Mtim)))
		}
	}
}

// TestAtimeIsNoatime: reads do not move atime (the mount behaves as
// noatime, as docs/deploy.md says); an explicit atime is kept.
func TestAtimeIsNoatime(t *testing.T) {
	d := dir(t)
	p := filepath.Join(d, "f")
	mustWrite(t, p, "read me")
	at := time.Unix(1_200_000_000, 0)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
	mustRead(t, p)
	if st := lstat(t, p); nsOf(st.Atim) != at.UnixNano() {
		t.Errorf("atime after a read: %v, want %v", time.Unix(0, nsOf(st.Atim)), at)
	}
}
