package conformance

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/core/client"
)

// proc is a child process whose output goes to a log file.
type proc struct {
	cmd *exec.Cmd
	log string
}

func startProc(t *testing.T, log string, bin string, args ...string) *proc {
	t.Helper()
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), "AWS_CA_BUNDLE=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	p := &proc{cmd: cmd, log: log}
	t.Cleanup(func() {
		p.stop(syscall.SIGKILL)
		if t.Failed() {
			t.Logf("%s:\n%s", filepath.Base(log), p.output())
		}
	})
	return p
}

// stop signals the process and waits for it (up to 20 s, then SIGKILL).
func (p *proc) stop(sig syscall.Signal) error {
	if p.cmd.ProcessState != nil {
		return nil
	}
	p.cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		return <-done
	}
}

func (p *proc) output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isMounted(dir string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && fields[4] == dir {
			return true
		}
	}
	return false
}

// TestTwoMountProcesses runs `flyfs server` as a child process and two
// `flyfs mount` processes of it: what one writes and closes the other sees
// within the cache timeout; `flyfs umount` and SIGTERM end the mounts.
func TestTwoMountProcesses(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	if testing.Short() {
		t.Skip("builds the flyfs binary; skipped in -short")
	}
	if os.Getuid() != 0 {
		t.Skip("mounts directly, which needs root")
	}
	srv := startServerProc(t)
	bin := srv.bin
	mounts := make([]string, 2)
	procs := make([]*proc, 2)
	for i := range mounts {
		mounts[i], procs[i] = startMountProc(t, srv, "m"+string(rune('a'+i)),
			"--attr-timeout", "500ms", "--entry-timeout", "500ms", "--op-timeout", "10s")
	}
	a, b := mounts[0], mounts[1]

	// Look the name up on b first, so b holds a negative entry that must
	// expire.
	if _, err := os.Stat(filepath.Join(b, "shared")); !os.IsNotExist(err) {
		t.Fatalf("stat before create: %v", err)
	}
	data := bytes.Repeat([]byte("across processes "), 100_000) // 1.7 MB
	if err := os.WriteFile(filepath.Join(a, "shared"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, 5*time.Second, "the file on the second mount", func() bool {
		got, err := os.ReadFile(filepath.Join(b, "shared"))
		return err == nil && bytes.Equal(got, data)
	})
	t.Logf("visible on the other mount after %v", time.Since(start).Round(time.Millisecond))

	// Overwrite in place on b; a sees the new bytes and length.
	if err := os.WriteFile(filepath.Join(b, "shared"), []byte("short now"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the rewrite on the first mount", func() bool {
		got, err := os.ReadFile(filepath.Join(a, "shared"))
		return err == nil && string(got) == "short now"
	})
	// A removal shows too.
	if err := os.Remove(filepath.Join(a, "shared")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the removal on the second mount", func() bool {
		_, err := os.Stat(filepath.Join(b, "shared"))
		return os.IsNotExist(err)
	})

	// `flyfs umount` ends one mount process; SIGTERM the other.
	if out, err := exec.Command(bin, "umount", a).CombinedOutput(); err != nil {
		t.Fatalf("flyfs umount: %v %s", err, out)
	}
	done := make(chan error, 1)
	go func() { done <- procs[0].cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("mount process after umount: %v\n%s", err, procs[0].output())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("mount process still running after flyfs umount")
	}
	if err := procs[1].stop(syscall.SIGTERM); err != nil {
		t.Errorf("mount process after SIGTERM: %v\n%s", err, procs[1].output())
	}
	for _, m := range mounts {
		if isMounted(m) {
			t.Errorf("%s still mounted", m)
		}
	}
	if err := srv.stop(syscall.SIGTERM); err != nil {
		t.Logf("server exit: %v", err)
	}
}

// serverProc is `flyfs server` running as a child process, ready for writes.
type serverProc struct {
	*proc
	work, bin, mgmtd, tokenFile string
}

// startServerProc builds flyfs and runs `flyfs server` as a child process,
// waiting until it takes a write.
func startServerProc(t *testing.T) *serverProc {
	t.Helper()
	work, err := os.MkdirTemp("", "flyfs-procs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) }) // after the processes' cleanups print their logs
	bin := filepath.Join(work, "flyfs")
	build := exec.Command("go", "build", "-o", bin, "github.com/flyfs/flyfs/cmd/flyfs")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build flyfs: %v\n%s", err, out)
	}
	mgmtd, err := cluster.ReservePort()
	if err != nil {
		t.Fatal(err)
	}
	metad, err := cluster.ReservePort()
	if err != nil {
		t.Fatal(err)
	}
	srv := startProc(t, filepath.Join(work, "server.log"), bin, "server", "--data", filepath.Join(work, "data"),
		"--mgmtd-addr", mgmtd, "--metad-addr", metad, "--chains", "4", "--no-sync")
	waitFor(t, 30*time.Second, "flyfs server to listen", func() bool {
		c, err := net.Dial("tcp", metad)
		if err == nil {
			c.Close()
		}
		return err == nil || srv.cmd.ProcessState != nil
	})

	// Ready when a file can be written and closed (metad settles lengths
	// with storage, which joins a moment after metad listens).
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tokenFile := filepath.Join(work, "data", cluster.TokenFile)
	token, err := cluster.ReadToken(tokenFile)
	if err != nil {
		t.Fatalf("the server's token: %v\n%s", err, srv.output())
	}
	cl, err := client.Dial(ctx, client.Config{Mgmtd: []string{mgmtd}, Token: token})
	if err != nil {
		t.Fatalf("dial the server: %v\n%s", err, srv.output())
	}
	waitFor(t, 30*time.Second, "the server to take a write", func() bool {
		f, err := cl.Create(ctx, "/ready", 0o644)
		if err != nil {
			return false
		}
		f.WriteAt([]byte("x"), 0)
		return f.Close() == nil
	})
	cl.Close()

	return &serverProc{proc: srv, work: work, bin: bin, mgmtd: mgmtd, tokenFile: tokenFile}
}

// startMountProc runs `flyfs mount` of srv at a new directory under its
// work directory, with args added, and waits until it is mounted.
func startMountProc(t *testing.T, srv *serverProc, name string, args ...string) (string, *proc) {
	t.Helper()
	dir := filepath.Join(srv.work, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Runs after the process cleanup: a mount process killed on a failure
	// leaves its mount behind, dead; take it away.
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	args = append([]string{"mount", "--mgmtd", srv.mgmtd, "--token-file", srv.tokenFile}, append(args, dir)...)
	p := startProc(t, filepath.Join(srv.work, name+".log"), srv.bin, args...)
	waitFor(t, 30*time.Second, "mount "+dir, func() bool {
		if p.cmd.ProcessState != nil {
			t.Fatalf("flyfs mount exited: %s", p.output())
		}
		return isMounted(dir)
	})
	return dir, p
}
