package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// maxFileSize is flyfs's largest file (metaapi.MaxFileSize).
const maxFileSize = 1 << 50

func TestErrnos(t *testing.T) {
	d := dir(t)
	f := filepath.Join(d, "file")
	mustWrite(t, f, "data")
	sub := filepath.Join(d, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(sub, "inner"), "x")
	empty := filepath.Join(d, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 256)
	max := strings.Repeat("m", 255)

	cases := []struct {
		name string
		op   func() error
		want syscall.Errno
	}{
		{"open a missing file", func() error { _, err := os.Open(filepath.Join(d, "missing")); return err }, syscall.ENOENT},
		{"stat under a missing dir", func() error { _, err := os.Stat(filepath.Join(d, "missing/x")); return err }, syscall.ENOENT},
		{"mkdir an existing name", func() error { return os.Mkdir(f, 0o755) }, syscall.EEXIST},
		{"create O_EXCL an existing file", func() error {
			_, err := os.OpenFile(f, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			return err
		}, syscall.EEXIST},
		{"rmdir a non-empty dir", func() error { return syscall.Rmdir(sub) }, syscall.ENOTEMPTY},
		{"rmdir a file", func() error { return syscall.Rmdir(f) }, syscall.ENOTDIR},
		{"unlink a dir", func() error { return syscall.Unlink(empty) }, syscall.EISDIR},
		{"open a dir for writing", func() error { _, err := os.OpenFile(sub, os.O_WRONLY, 0); return err }, syscall.EISDIR},
		{"a path through a file: stat", func() error { _, err := os.Stat(filepath.Join(f, "x")); return err }, syscall.ENOTDIR},
		{"a path through a file: create", func() error { return os.WriteFile(filepath.Join(f, "x"), nil, 0o644) }, syscall.ENOTDIR},
		{"a path through a file: mkdir", func() error { return os.Mkdir(filepath.Join(f, "x"), 0o755) }, syscall.ENOTDIR},
		{"name of 256 bytes: create", func() error { return os.WriteFile(filepath.Join(d, long), nil, 0o644) }, syscall.ENAMETOOLONG},
		{"name of 256 bytes: mkdir", func() error { return os.Mkdir(filepath.Join(d, long), 0o755) }, syscall.ENAMETOOLONG},
		{"name of 256 bytes: stat", func() error { _, err := os.Stat(filepath.Join(d, long)); return err }, syscall.ENAMETOOLONG},
		{"name of 256 bytes: rename to", func() error { return os.Rename(f, filepath.Join(d, long)) }, syscall.ENAMETOOLONG},
		{"name of 256 bytes: symlink", func() error { return os.Symlink("t", filepath.Join(d, long)) }, syscall.ENAMETOOLONG},
		{"name of 255 bytes works", func() error { return os.WriteFile(filepath.Join(d, max), []byte("ok"), 0o644) }, 0},
		{"a NUL in a name", func() error { return os.WriteFile(filepath.Join(d, "a\x00b"), nil, 0o644) }, syscall.EINVAL},
		{"hard link to a dir", func() error { return os.Link(sub, filepath.Join(d, "dirlink")) }, syscall.EPERM},
		{"hard link onto an existing name", func() error { return os.Link(f, filepath.Join(sub, "inner")) }, syscall.EEXIST},
		{"readlink of a file", func() error { _, err := os.Readlink(f); return err }, syscall.EINVAL},
		{"rmdir of .", func() error { return syscall.Rmdir(empty + "/.") }, syscall.EINVAL},
		{"write past the largest file size", func() error {
			fh, err := os.OpenFile(f, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer fh.Close()
			_, err = fh.WriteAt([]byte("x"), maxFileSize)
			return err
		}, syscall.EFBIG},
		{"truncate past the largest file size", func() error { return os.Truncate(f, maxFileSize+1) }, syscall.EFBIG},
		{"write on a read-only descriptor", func() error {
			fh, err := os.Open(f)
			if err != nil {
				return err
			}
			defer fh.Close()
			_, err = fh.Write([]byte("x"))
			return err
		}, syscall.EBADF},
		{"getxattr of a missing attribute", func() error { _, err := unix.Getxattr(f, "user.none", nil); return err }, syscall.ENODATA},
		{"removexattr of a missing attribute", func() error { return unix.Removexattr(f, "user.none") }, syscall.ENODATA},
		{"mkfifo over an existing file", func() error { return syscall.Mkfifo(f, 0o644) }, syscall.EEXIST},
		{"create inside /.flyfs", func() error { return os.WriteFile(filepath.Join(mountDir, ".flyfs", "x"), nil, 0o644) }, syscall.EPERM},
		{"a bogus registration in /.flyfs", func() error { return os.Symlink("/etc/passwd", filepath.Join(mountDir, ".flyfs", "flyfs-iov-zz")) }, syscall.EINVAL},
	}
	for _, c := range cases {
		wantErrno(t, c.name, c.op(), c.want)
	}
	// The file the failed writes aimed at is unchanged.
	if got := mustRead(t, f); got != "data" {
		t.Errorf("file holds %q after failed writes, want %q", got, "data")
	}
}

func TestXattrs(t *testing.T) {
	d := dir(t)
	f := filepath.Join(d, "f")
	mustWrite(t, f, "x")
	if err := unix.Setxattr(f, "user.a", []byte("alpha"), 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(f, "user.b", []byte(""), 0); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "XATTR_CREATE over an existing one", unix.Setxattr(f, "user.a", []byte("x"), unix.XATTR_CREATE), syscall.EEXIST)
	wantErrno(t, "XATTR_REPLACE of a missing one", unix.Setxattr(f, "user.c", []byte("x"), unix.XATTR_REPLACE), syscall.ENODATA)
	n, err := unix.Getxattr(f, "user.a", nil) // size query
	if err != nil || n != 5 {
		t.Fatalf("size of user.a: %d, %v", n, err)
	}
	small := make([]byte, 2)
	_, err = unix.Getxattr(f, "user.a", small)
	wantErrno(t, "getxattr into a short buffer", err, syscall.ERANGE)
	buf := make([]byte, 64)
	n, err = unix.Getxattr(f, "user.a", buf)
	if err != nil || string(buf[:n]) != "alpha" {
		t.Fatalf("user.a = %q, %v", buf[:n], err)
	}
	n, err = unix.Listxattr(f, buf)
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
	if strings.Join(names, ",") != "user.a,user.b" {
		t.Fatalf("listxattr: %q", names)
	}
	if err := unix.Removexattr(f, "user.a"); err != nil {
		t.Fatal(err)
	}
	_, err = unix.Getxattr(f, "user.a", buf)
	wantErrno(t, "getxattr after remove", err, syscall.ENODATA)
	// Attributes on a directory and through a symlink's target.
	if err := unix.Setxattr(d, "user.dir", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	// POSIX ACLs are kept (and enforced: acl_test.go); a malformed one is not.
	if err := unix.Setxattr(f, "system.posix_acl_access", validACL, 0); err != nil {
		t.Fatalf("setting a POSIX ACL: %v", err)
	}
	wantErrno(t, "a malformed POSIX ACL", unix.Setxattr(f, "system.posix_acl_access", validACL[:10], 0), syscall.EINVAL)
}

// validACL is u::rw-,g::r--,o::r-- in the kernel's xattr format.
var validACL = []byte{2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff, 4, 0, 4, 0, 0xff, 0xff, 0xff, 0xff, 0x20, 0, 4, 0, 0xff, 0xff, 0xff, 0xff}

func TestStatfs(t *testing.T) {
	d := dir(t)
	var st syscall.Statfs_t
	if err := syscall.Statfs(d, &st); err != nil {
		t.Fatal(err)
	}
	if st.Namelen != 255 || st.Bsize == 0 || st.Blocks == 0 || st.Bavail == 0 {
		t.Fatalf("statfs: %+v", st)
	}
}
