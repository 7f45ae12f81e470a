package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary run runHelper instead of the tests: the
// permission tests re-execute it as another user.
const helperEnv = "FLYFS_CONFORMANCE_HELPER"

// nobody is the unprivileged user the helper runs as.
const nobody = 65534

// helperOp is one system call the helper makes; it reports the errno.
type helperOp struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	Arg  string `json:"arg,omitempty"`
}

// runHelper runs the ops given as JSON on stdin and prints one errno
// number per op as a JSON array.
func runHelper(args []string) int {
	var ops []helperOp
	if err := json.NewDecoder(os.Stdin).Decode(&ops); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	out := make([]int, len(ops))
	for i, op := range ops {
		out[i] = int(errnoOf(doOp(op)))
	}
	json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

func doOp(op helperOp) error {
	switch op.Op {
	case "read":
		_, err := os.ReadFile(op.Path)
		return err
	case "write":
		f, err := os.OpenFile(op.Path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.Write([]byte(op.Arg))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case "create":
		return os.WriteFile(op.Path, []byte(op.Arg), 0o644)
	case "mkdir":
		return os.Mkdir(op.Path, 0o755)
	case "unlink":
		return os.Remove(op.Path)
	case "rename":
		return os.Rename(op.Path, op.Arg)
	case "chmod":
		return os.Chmod(op.Path, 0o777)
	case "chown":
		return os.Chown(op.Path, nobody, nobody)
	case "utime":
		t := time.Unix(1e9, 0)
		return os.Chtimes(op.Path, t, t)
	case "truncate":
		return os.Truncate(op.Path, 0)
	case "list":
		_, err := os.ReadDir(op.Path)
		return err
	case "stat":
		_, err := os.Stat(op.Path)
		return err
	case "owner": // fails unless the file belongs to the helper
		var st syscall.Stat_t
		if err := syscall.Stat(op.Path, &st); err != nil {
			return err
		}
		if st.Uid != nobody || st.Gid != nobody {
			return syscall.EBADE
		}
		return nil
	case "setxattr":
		return syscall.Setxattr(op.Path, "user.x", []byte("1"), 0)
	case "mkfifo":
		return syscall.Mkfifo(op.Path, 0o644)
	case "mknod-chr":
		return syscall.Mknod(op.Path, syscall.S_IFCHR|0o644, 1<<8|3)
	case "symlink":
		return os.Symlink("target", op.Path)
	}
	return syscall.ENOSYS
}

// helperBinary copies the test binary where another user can run it.
func helperBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.MkdirTemp("", "flyfs-helper-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	os.Chmod(d, 0o755)
	dst := filepath.Join(d, "helper")
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// asNobody runs ops as uid/gid 65534 and returns their errnos.
func asNobody(t *testing.T, bin string, ops []helperOp) []syscall.Errno {
	t.Helper()
	in, _ := json.Marshal(ops)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stdin = strings.NewReader(string(in))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("helper as uid %d: %v %s", nobody, err, stderr)
	}
	var res []int
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(ops) {
		t.Fatalf("helper output %q: %v", out, err)
	}
	errs := make([]syscall.Errno, len(res))
	for i, r := range res {
		errs[i] = syscall.Errno(r)
	}
	return errs
}

func TestPermissionsAsAnotherUser(t *testing.T) {
	d := dir(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run a helper as another user")
	}
	bin := helperBinary(t)
	j := func(p string) string { return filepath.Join(d, p) }
	os.Chmod(d, 0o755)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Owned by root.
	must(os.WriteFile(j("private"), []byte("secret"), 0o600))
	must(os.WriteFile(j("public"), []byte("hello"), 0o644))
	must(os.WriteFile(j("groupw"), []byte("g"), 0o664))
	must(os.Chown(j("groupw"), 0, nobody))
	must(os.Mkdir(j("closed"), 0o700))
	must(os.WriteFile(j("closed/inner"), []byte("x"), 0o644))
	must(os.Mkdir(j("ro"), 0o755))
	must(os.Mkdir(j("open"), 0o777))
	must(os.Mkdir(j("sticky"), 0o1777))
	must(os.WriteFile(j("sticky/roots"), []byte("r"), 0o666))
	// Modes exactly as meant, whatever the umask.
	for p, m := range map[string]os.FileMode{"groupw": 0o664, "open": 0o777, "sticky": 0o777 | os.ModeSticky, "sticky/roots": 0o666} {
		must(os.Chmod(j(p), m))
	}
	// Owned by nobody.
	must(os.WriteFile(j("mine"), []byte("m"), 0o600))
	must(os.Chown(j("mine"), nobody, nobody))

	cases := []struct {
		op   helperOp
		want syscall.Errno
	}{
		{helperOp{Op: "read", Path: j("private")}, syscall.EACCES},
		{helperOp{Op: "read", Path: j("public")}, 0},
		{helperOp{Op: "write", Path: j("public"), Arg: "x"}, syscall.EACCES},
		{helperOp{Op: "write", Path: j("groupw"), Arg: "x"}, 0},
		{helperOp{Op: "truncate", Path: j("public")}, syscall.EACCES},
		{helperOp{Op: "stat", Path: j("closed/inner")}, syscall.EACCES},
		{helperOp{Op: "list", Path: j("closed")}, syscall.EACCES},
		{helperOp{Op: "create", Path: j("ro/new")}, syscall.EACCES},
		{helperOp{Op: "mkdir", Path: j("ro/newdir")}, syscall.EACCES},
		{helperOp{Op: "unlink", Path: j("public")}, syscall.EACCES},
		{helperOp{Op: "rename", Path: j("public"), Arg: j("open/stolen")}, syscall.EACCES},
		{helperOp{Op: "chmod", Path: j("public")}, syscall.EPERM},
		{helperOp{Op: "chown", Path: j("mine")}, 0}, // to itself: allowed
		{helperOp{Op: "chown", Path: j("public")}, syscall.EPERM},
		{helperOp{Op: "utime", Path: j("public")}, syscall.EPERM},
		{helperOp{Op: "setxattr", Path: j("public")}, syscall.EACCES},
		{helperOp{Op: "create", Path: j("open/made"), Arg: "n"}, 0},
		{helperOp{Op: "owner", Path: j("open/made")}, 0}, // created with the caller's ids
		{helperOp{Op: "mkdir", Path: j("open/dir")}, 0},
		{helperOp{Op: "owner", Path: j("open/dir")}, 0},
		{helperOp{Op: "unlink", Path: j("sticky/roots")}, syscall.EPERM},
		{helperOp{Op: "write", Path: j("sticky/roots"), Arg: "w"}, 0},
		{helperOp{Op: "chmod", Path: j("mine")}, 0},
	}
	ops := make([]helperOp, len(cases))
	for i, c := range cases {
		ops[i] = c.op
	}
	got := asNobody(t, bin, ops)
	for i, c := range cases {
		if got[i] != c.want {
			t.Errorf("as uid %d: %s %s: got %v (%d), want %v", nobody, c.op.Op, strings.TrimPrefix(c.op.Path, d), got[i], int(got[i]), c.want)
		}
	}
	// Root's view of what the helper did.
	if got := mustRead(t, j("private")); got != "secret" {
		t.Errorf("private file changed: %q", got)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(j("open/made"), &st); err != nil || st.Uid != nobody {
		t.Errorf("file made by uid %d is owned by %d (%v)", nobody, st.Uid, err)
	}
}
