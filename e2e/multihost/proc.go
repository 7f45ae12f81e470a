package multihost

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is one flyfs process on a host: started in the host's network
// namespace (nsenter --net, so it shares the root mount namespace and a FUSE
// mount it makes is visible to the test), killed, stopped, continued and
// restarted with the same arguments on the same data.
type Proc struct {
	Name string
	Host *Host
	Args []string
	Log  string // stdout and stderr, appended across restarts
	Env  []string

	t      testing.TB
	bin    string
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // how the current run ended, once exited is closed
	stops  int   // SIGSTOPs not yet continued
	starts int   // runs started
}

func newProc(t testing.TB, bin, name string, h *Host, log string, args ...string) *Proc {
	p := &Proc{Name: name, Host: h, Args: args, Log: log, t: t, bin: bin}
	t.Cleanup(func() { p.Kill() })
	return p
}

// Start runs the process (again); it must not be running.
func (p *Proc) Start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !p.done() {
		p.t.Fatalf("%s: start while running", p.Name)
	}
	f, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "=== %s: %s %v\n", time.Now().Format(time.RFC3339Nano), p.Name, p.Args)
	cmd := exec.Command("nsenter", append([]string{"--net=" + p.Host.NSPath(), p.bin}, p.Args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), p.Env...)
	// If the test binary dies without its cleanups (a timeout), its children
	// go with it rather than serving on in a namespace nobody removes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("%s: %v", p.Name, err)
	}
	p.cmd, p.exited, p.stops = cmd, make(chan struct{}), 0
	p.starts++
	go func(cmd *exec.Cmd, exited chan struct{}) {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(exited)
	}(cmd, p.exited)
}

// Starts counts the runs started so far.
func (p *Proc) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

func (p *Proc) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Running reports whether the process is alive (stopped counts as alive).
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !p.done()
}

// Pid is the process id of the current run (nsenter execs, so it is flyfs's).
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// Restart kills the process with SIGKILL and starts it again.
func (p *Proc) Restart() {
	p.t.Helper()
	p.Kill()
	p.Start()
}

// Stop freezes the process with SIGSTOP: it holds its sockets and state but
// does nothing (a "gray" failure).
func (p *Proc) Stop() { p.signal(syscall.SIGSTOP) }

// Cont resumes a stopped process.
func (p *Proc) Cont() { p.signal(syscall.SIGCONT) }

func (p *Proc) signal(s syscall.Signal) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.done() {
		p.t.Fatalf("%s: %v to a process that is not running", p.Name, s)
	}
	if err := p.cmd.Process.Signal(s); err != nil {
		p.t.Fatalf("%s: %v: %v", p.Name, s, err)
	}
}

// Exited returns a channel closed when the current run ends.
func (p *Proc) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// Tail returns the last n bytes of the process's log.
func (p *Proc) Tail(n int64) string {
	f, err := os.Open(p.Log)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	st, _ := f.Stat()
	off := max(st.Size()-n, 0)
	b := make([]byte, st.Size()-off)
	f.ReadAt(b, off)
	return string(b)
}
