package conformance

import (
	"bufio"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// special is one special file of TestSpecialFiles.
type special struct {
	name string
	kind uint32 // S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK
	rdev uint64
	dt   fs.FileMode // what a listing says
}

var specials = []special{
	{"fifo", syscall.S_IFIFO, 0, fs.ModeNamedPipe},
	{"sock", syscall.S_IFSOCK, 0, fs.ModeSocket},
	{"chr", syscall.S_IFCHR, unix.Mkdev(1, 3), fs.ModeDevice | fs.ModeCharDevice},
	{"blk", syscall.S_IFBLK, unix.Mkdev(7, 200), fs.ModeDevice},
	{"bigdev", syscall.S_IFCHR, unix.Mkdev(250, 70000), fs.ModeDevice | fs.ModeCharDevice},
}

// makeSpecial creates s at p; a socket is bound (and its listener returned).
func makeSpecial(t *testing.T, p string, s special, perm uint32) net.Listener {
	t.Helper()
	if s.kind == syscall.S_IFSOCK {
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatalf("bind a unix socket in the mount: %v", err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		if err := os.Chmod(p, os.FileMode(perm)); err != nil {
			t.Fatal(err)
		}
		return l
	}
	if err := unix.Mknod(p, s.kind|perm, int(s.rdev)); err != nil {
		t.Fatalf("mknod %s: %v", s.name, err)
	}
	return nil
}

// TestSpecialFiles: fifos, sockets and devices are inodes of their own
// type: mknod, mkfifo and bind make them, stat and readdir report them (with
// a device's number), the kernel does their I/O, and they take part in every
// namespace operation like a file.
func TestSpecialFiles(t *testing.T) {
	d := dir(t)
	j := func(p string) string { return filepath.Join(d, p) }
	var ln net.Listener
	for _, s := range specials {
		if l := makeSpecial(t, j(s.name), s, 0o640); l != nil {
			ln = l
			defer l.Close()
		}
	}
	for _, s := range specials {
		var st unix.Stat_t
		if err := unix.Lstat(j(s.name), &st); err != nil {
			t.Fatalf("stat %s: %v", s.name, err)
		}
		if st.Mode&unix.S_IFMT != s.kind || st.Mode&07777 != 0o640 {
			t.Errorf("%s: mode %o, want %o", s.name, st.Mode, s.kind|0o640)
		}
		if st.Rdev != s.rdev {
			t.Errorf("%s: rdev %d:%d, want %d:%d", s.name, unix.Major(st.Rdev), unix.Minor(st.Rdev), unix.Major(s.rdev), unix.Minor(s.rdev))
		}
		if st.Nlink != 1 || st.Size != 0 || st.Uid != uint32(os.Getuid()) {
			t.Errorf("%s: nlink %d size %d uid %d", s.name, st.Nlink, st.Size, st.Uid)
		}
	}
	ents, err := os.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]fs.FileMode{}
	for _, e := range ents {
		types[e.Name()] = e.Type()
	}
	for _, s := range specials {
		if types[s.name] != s.dt {
			t.Errorf("readdir says %s is %v, want %v", s.name, types[s.name], s.dt)
		}
	}

	// The kernel carries a fifo's and a socket's data; flyfs only holds
	// the inode.
	done := make(chan error, 1)
	go func() {
		w, err := os.OpenFile(j("fifo"), os.O_WRONLY, 0)
		if err == nil {
			_, err = w.WriteString("through the pipe\n")
			w.Close()
		}
		done <- err
	}()
	r, err := os.Open(j("fifo"))
	if err != nil {
		t.Fatalf("open the fifo: %v", err)
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	r.Close()
	if err != nil || line != "through the pipe\n" {
		t.Errorf("read from the fifo: %q %v", line, err)
	}
	if err := <-done; err != nil {
		t.Errorf("write to the fifo: %v", err)
	}
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte("hello over the socket\n"))
			c.Close()
		}
	}()
	c, err := net.DialTimeout("unix", j("sock"), 5*time.Second)
	if err != nil {
		t.Fatalf("connect to the socket in the mount: %v", err)
	}
	line, err = bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil || line != "hello over the socket\n" {
		t.Errorf("read from the socket: %q %v", line, err)
	}
	// The mount is nodev: a device node opens to nothing.
	_, err = os.Open(j("chr"))
	wantErrno(t, "open a device on a nodev mount", err, syscall.EACCES)

	// Namespace operations on every kind.
	for _, s := range specials {
		p := j(s.name)
		if err := os.Chmod(p, 0o604); err != nil {
			t.Errorf("chmod %s: %v", s.name, err)
		}
		if err := os.Lchown(p, nobody, nobody); err != nil {
			t.Errorf("chown %s: %v", s.name, err)
		}
		tm := time.Unix(1_234_567_890, 0)
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{unix.NsecToTimespec(tm.UnixNano()), unix.NsecToTimespec(tm.UnixNano())}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Errorf("utimensat %s: %v", s.name, err)
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil || st.Mode != s.kind|0o604 || st.Uid != nobody || st.Gid != nobody || st.Mtim.Sec != tm.Unix() || st.Rdev != s.rdev {
			t.Errorf("%s after chmod, chown, utimes: %+v %v", s.name, st, err)
		}
		_, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		wantErrno(t, "O_EXCL create over a "+s.name, err, syscall.EEXIST)
		wantErrno(t, "mknod over a "+s.name, unix.Mknod(p, syscall.S_IFIFO|0o644, 0), syscall.EEXIST)
		if err := os.Link(p, p+".link"); err != nil {
			t.Errorf("link %s: %v", s.name, err)
		} else if n := nlink(t, p); n != 2 {
			t.Errorf("%s: nlink %d after link, want 2", s.name, n)
		}
		if err := os.Rename(p+".link", p+".moved"); err != nil {
			t.Errorf("rename %s: %v", s.name, err)
		}
		var st2 unix.Stat_t
		if err := unix.Lstat(p+".moved", &st2); err != nil || st2.Ino != st.Ino || st2.Rdev != s.rdev || st2.Mode != st.Mode {
			t.Errorf("%s: the moved link is %+v (%v), want the same inode", s.name, st2, err)
		}
		if err := os.Remove(p + ".moved"); err != nil {
			t.Errorf("unlink %s: %v", s.name, err)
		} else if n := nlink(t, p); n != 1 {
			t.Errorf("%s: nlink %d after unlinking the other name, want 1", s.name, n)
		}
		// A file renamed over it replaces it.
		mustWrite(t, p+".file", "over")
		if err := os.Rename(p+".file", p); err != nil {
			t.Errorf("rename a file over a %s: %v", s.name, err)
		} else if got := mustRead(t, p); got != "over" {
			t.Errorf("after a rename over a %s: %q", s.name, got)
		}
	}
	if err := os.RemoveAll(d); err != nil {
		t.Errorf("remove a directory holding special files: %v", err)
	}
}

// TestMknodRegularAndAsAnotherUser: mknod of a regular file still makes a
// file; anyone with write permission may make a fifo, only root a device.
func TestMknodRegularAndAsAnotherUser(t *testing.T) {
	d := dir(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run a helper as another user")
	}
	j := func(p string) string { return filepath.Join(d, p) }
	os.Chmod(d, 0o755)
	if err := unix.Mknod(j("reg"), syscall.S_IFREG|0o600, 0); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, j("reg"), "file")
	if got := mustRead(t, j("reg")); got != "file" {
		t.Errorf("mknod'ed regular file holds %q", got)
	}
	if err := os.Mkdir(j("open"), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(j("open"), 0o777)
	got := asNobody(t, helperBinary(t), []helperOp{
		{Op: "mkfifo", Path: j("open/fifo")},
		{Op: "mknod-chr", Path: j("open/dev")},
		{Op: "owner", Path: j("open/fifo")},
	})
	if got[0] != 0 || got[1] != syscall.EPERM || got[2] != 0 {
		t.Errorf("as uid %d: mkfifo %v, mknod of a device %v (want EPERM), owner of the fifo %v", nobody, got[0], got[1], got[2])
	}
}
