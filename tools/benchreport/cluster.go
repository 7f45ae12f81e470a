package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/bench/vs/fusemount"
	"github.com/flyfs/flyfs/posix/fusefs"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// server is a running `flyfs server` with its FUSE mount and S3 gateway.
type server struct {
	cmd       *exec.Cmd
	mount     string
	s3        string // http://host:port
	accessKey string
	secretKey string
	args      []string
	logPath   string
	exited    chan struct{}
	waitErr   error
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before the server binds it; the server then fails to start with
// a clear error, and a rerun picks other ports.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

var (
	rootKeyRE = regexp.MustCompile(`root key\s+access key (\S+), secret (\S+)`)
	s3RE      = regexp.MustCompile(`^\s*s3\s+(http://\S+?)/?\s`)
)

// startServer runs `flyfs server` on a fresh data dir with a FUSE mount and
// waits until it says every front end is up.
func startServer(ctx context.Context, bin, work string, disks, replicas int, logw io.Writer) (*server, error) {
	data, mnt := filepath.Join(work, "data"), filepath.Join(work, "mnt")
	for _, d := range []string{data, mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	var addrs [3]string
	for i := range addrs {
		a, err := freePort()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	s := &server{mount: mnt, logPath: filepath.Join(work, "server.log"), exited: make(chan struct{})}
	s.args = []string{"server", "--data", data, "--mount", mnt,
		"--mgmtd-addr", addrs[0], "--metad-addr", addrs[1], "--s3-addr", addrs[2], "--console-addr", "",
		"--disks", fmt.Sprint(disks), "--replicas", fmt.Sprint(replicas)}
	logf, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, s.args...)
	// Keys come from the server (generated and printed on the first start);
	// a FLYFS_* variable in our environment must not change its flags.
	s.cmd.Env = cleanEnv()
	s.cmd.Stderr = logf
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		up := false
		for sc.Scan() {
			line := sc.Text()
			if m := rootKeyRE.FindStringSubmatch(line); m != nil {
				s.accessKey, s.secretKey = m[1], m[2]
				line = strings.Replace(line, m[2], "<secret>", 1)
			}
			if m := s3RE.FindStringSubmatch(line + " "); m != nil {
				s.s3 = m[1]
			}
			fmt.Fprintf(logw, "  server: %s\n", line)
			// The "try:" line comes after the mount and the gateway.
			if !up && strings.Contains(line, "try: flyfs admin") {
				up = true
				ready <- nil
			}
		}
		io.Copy(io.Discard, out)
	}()
	go func() {
		s.waitErr = s.cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	select {
	case err := <-ready:
		if err == nil && (s.s3 == "" || s.accessKey == "") {
			err = errors.New("the server did not print its S3 address and root key")
		}
		if err != nil {
			s.stop()
			return nil, err
		}
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("flyfs server exited while starting (%v); its log:\n%s", s.waitErr, tail(s.logPath, 20))
	case <-time.After(90 * time.Second):
		s.stop()
		return nil, fmt.Errorf("flyfs server not up after 90s; its log:\n%s", tail(s.logPath, 20))
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
}

// stop asks the server to shut down (it unmounts first), then kills it if
// it takes too long, and makes sure the mount is gone.
func (s *server) stop() {
	select {
	case <-s.exited:
	default:
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
	}
	if isMounted(s.mount) {
		unmount(s.mount)
	}
}

// cleanEnv is our environment without FLYFS_* variables, which flyfs reads
// as flags.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLYFS_") && !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return env
}

// loopback is go-fuse's loopback file system of a local directory, served
// by this process: the FUSE ceiling of the machine, the same kernel path
// the flyfs mount takes with the cheapest possible file system behind it.
type loopback struct {
	srv *fuse.Server
	mnt string
}

// mountLoopback mounts dir at mnt with the request size, background
// requests and read-ahead of the flyfs mount (posix/fusefs), so the two
// differ only in what is behind the kernel.
//
// passthrough keeps go-fuse's default: where the kernel allows it (root,
// Linux 6.9+), the data of open files bypasses the daemon. It is mounted
// only to show that difference; the ceiling has it off (see daemonNode).
func mountLoopback(dir, mnt string, logw io.Writer, passthrough bool) (*loopback, error) {
	for _, d := range []string{dir, mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	newRoot := fusemount.NewDaemonLoopback
	if passthrough {
		newRoot = fs.NewLoopbackRoot
	}
	root, err := newRoot(dir)
	if err != nil {
		return nil, err
	}
	sec := time.Second
	srv, err := fs.Mount(mnt, root, &fs.Options{
		MountOptions: fuse.MountOptions{DirectMount: true, MaxWrite: 1 << 20, MaxReadAhead: 1 << 20, MaxBackground: 64,
			FsName: "loopback", Name: "loopback",
			// go-fuse logs each 1 MiB read that does not fit a pipe for
			// splice (it then copies); keep that out of the progress log.
			Logger: log.New(logw, "loopback: ", log.LstdFlags)},
		AttrTimeout: &sec, EntryTimeout: &sec,
	})
	if err != nil {
		return nil, fmt.Errorf("mount the loopback file system at %s: %w", mnt, err)
	}
	if err := fusefs.SetReadAhead(mnt, 4096); err != nil {
		fmt.Fprintf(os.Stderr, "benchreport: loopback read-ahead left at the kernel default: %v\n", err)
	}
	return &loopback{srv: srv, mnt: mnt}, nil
}

func (l *loopback) unmount() {
	if err := l.srv.Unmount(); err != nil {
		unmount(l.mnt)
	}
}

func isMounted(dir string) bool {
	var st, parent syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return errors.Is(err, syscall.ENOTCONN) // a dead FUSE mount is still there
	}
	if syscall.Stat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}

// unmount detaches a mount lazily (a dead FUSE server cannot answer).
func unmount(dir string) {
	syscall.Unmount(dir, syscall.MNT_DETACH)
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
