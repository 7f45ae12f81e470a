package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPOSIXACLs: ACLs set with setfacl are kept, read back by getfacl,
// enforced by the kernel for another user (a named user's entry grants
// what the mode does not, the mask limits it, chmod moves the mask), and a
// directory's default ACL is inherited by what is created in it.
func TestPOSIXACLs(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the ACL checks switch to another user: they need root")
	}
	setfacl := needProgram(t, "setfacl", "acl")
	getfacl := needProgram(t, "getfacl", "acl")
	bin := helperBinary(t)
	d := dir(t)
	os.Chmod(d, 0o755)
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v %s", name, args, err, out)
		}
		return string(out)
	}
	f := filepath.Join(d, "private")
	mustWrite(t, f, "secret")
	os.Chmod(f, 0o600)
	if got := asNobody(t, bin, []helperOp{{Op: "read", Path: f}}); got[0] != syscall.EACCES {
		t.Fatalf("nobody reads a 0600 file: %v", got[0])
	}
	run(setfacl, "-m", "u:65534:r", f)
	acl := run(getfacl, "-n", "--omit-header", f)
	if !strings.Contains(acl, "user:65534:r--") || !strings.Contains(acl, "mask::r--") {
		t.Fatalf("getfacl after setfacl -m u:65534:r:\n%s", acl)
	}
	st, _ := os.Stat(f)
	if st.Mode().Perm() != 0o640 {
		t.Errorf("the mode after the ACL: %v, want 0640 (the mask in the group bits)", st.Mode().Perm())
	}
	if got := asNobody(t, bin, []helperOp{{Op: "read", Path: f}, {Op: "write", Path: f, Arg: "x"}}); got[0] != 0 || got[1] != syscall.EACCES {
		t.Fatalf("nobody with u:65534:r: read %v, write %v; want ok, EACCES", got[0], got[1])
	}
	// chmod moves the mask: the named entry is limited by it.
	os.Chmod(f, 0o600)
	if acl := run(getfacl, "-n", "--omit-header", f); !strings.Contains(acl, "mask::---") {
		t.Fatalf("getfacl after chmod 600:\n%s", acl)
	}
	if got := asNobody(t, bin, []helperOp{{Op: "read", Path: f}}); got[0] != syscall.EACCES {
		t.Fatalf("nobody reads once chmod 600 cleared the mask: %v", got[0])
	}
	run(setfacl, "-b", f)
	if acl := run(getfacl, "-n", "--omit-header", f); strings.Contains(acl, "65534") {
		t.Fatalf("getfacl after setfacl -b:\n%s", acl)
	}
	// A default ACL is inherited: files get it as their access ACL, directories as both.
	shared := filepath.Join(d, "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	run(setfacl, "-m", "u:65534:rwx", "-m", "d:u:65534:rwx", "-m", "d:m::rwx", shared)
	// As programs create (0666 and 0777, the umask 022): the default ACL
	// takes the umask's place, so the named user may write.
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	if err := os.WriteFile(filepath.Join(shared, "new"), []byte("n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(shared, "sub"), 0o777); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(d, "plain")
	if err := os.WriteFile(plain, []byte("p"), 0o666); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(plain); st.Mode().Perm() != 0o644 {
		t.Errorf("a file created 0666 under umask 022 outside any default ACL: %v, want 0644", st.Mode().Perm())
	}
	if acl := run(getfacl, "-n", "--omit-header", filepath.Join(shared, "new")); !strings.Contains(acl, "user:65534:rwx") {
		t.Fatalf("a new file's inherited ACL:\n%s", acl)
	}
	if acl := run(getfacl, "-n", "--omit-header", filepath.Join(shared, "sub")); !strings.Contains(acl, "default:user:65534:rwx") {
		t.Fatalf("a new directory's inherited default ACL:\n%s", acl)
	}
	got := asNobody(t, bin, []helperOp{
		{Op: "read", Path: filepath.Join(shared, "new")},
		{Op: "write", Path: filepath.Join(shared, "new"), Arg: "w"},
		{Op: "create", Path: filepath.Join(shared, "sub", "by-nobody"), Arg: "x"},
	})
	for i, want := range []syscall.Errno{0, 0, 0} {
		if got[i] != want {
			t.Errorf("nobody under the inherited ACL, op %d: %v, want %v", i, got[i], want)
		}
	}
	wantErrno(t, "a default ACL on a file", exec.Command(setfacl, "-m", "d:u:65534:r", f).Run(), 0xffff)
}
