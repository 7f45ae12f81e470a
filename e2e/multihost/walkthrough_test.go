package multihost

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// walkBlock is one shell block of docs/deploy.md marked
// <!-- walkthrough: NAME [host=H] [refused] -->.
type walkBlock struct {
	walk    string // one-machine, three-hosts
	host    string // "1", "2", "3", "all" ("" on one machine)
	refused bool   // the command must fail
	line    int    // where the block starts in the page
	text    string
}

var walkMarker = regexp.MustCompile(`^<!-- walkthrough: (\S+)((?: \S+)*) -->$`)

// walkBlocks reads the marked blocks of a page, in order.
func walkBlocks(t *testing.T, page string) []walkBlock {
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []walkBlock
	for i := 0; i < len(lines); i++ {
		m := walkMarker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		blk := walkBlock{walk: m[1], line: i + 1}
		for _, opt := range strings.Fields(m[2]) {
			switch {
			case opt == "refused":
				blk.refused = true
			case strings.HasPrefix(opt, "host="):
				blk.host = strings.TrimPrefix(opt, "host=")
			default:
				t.Fatalf("%s:%d: unknown walkthrough option %q", page, i+1, opt)
			}
		}
		if i+1 >= len(lines) || lines[i+1] != "```sh" {
			t.Fatalf("%s:%d: a walkthrough marker must be followed by a ```sh block", page, i+1)
		}
		var body []string
		for i += 2; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		blk.text = strings.Join(body, "\n") + "\n"
		out = append(out, blk)
	}
	return out
}

// hostShell is one bash on a host, run with -e: the blocks are sourced into
// it one after another, so what a block exports (and the jobs it starts)
// stay for the next, as in a terminal; a failing command ends the shell.
type hostShell struct {
	t     *testing.T
	name  string
	dir   string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string // the shell's output, closed when it exits
	log   *os.File
}

func startShell(t *testing.T, h *Host, dir, binDir string, env ...string) *hostShell {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "shell.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nsenter", "--net="+h.NSPath(), "bash", "--norc", "--noprofile", "-eu", "-o", "pipefail")
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + binDir + ":/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir,
		"TMPDIR=" + os.TempDir(), "AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}, env...)
	cmd.Stderr = log
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &hostShell{t: t, name: h.Name, dir: dir, cmd: cmd, in: in, lines: make(chan string, 1024), log: log}
	go func() {
		defer close(s.lines)
		r := bufio.NewReader(out)
		for {
			l, err := r.ReadString('\n')
			if l != "" {
				s.lines <- strings.TrimRight(l, "\n")
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
		log.Close()
	})
	return s
}

const walkDone = "__walkthrough_block_done__"

// run sources one block and waits for it; a failure (or a refused block
// that ran) fails the test with the block and the shell's output.
func (s *hostShell) run(b walkBlock, within time.Duration) {
	s.t.Helper()
	f := filepath.Join(s.dir, fmt.Sprintf("block-%d.sh", b.line))
	if err := os.WriteFile(f, []byte(b.text), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if b.refused {
		// Each refused command must exit non-zero, on its own, within a
		// minute, and say which flag to fix.
		fmt.Fprintf(s.in, "if timeout 60 bash -eu %s > %s.out 2>&1; then echo ran; else echo refused $?; fi; echo %s\n", f, f, walkDone)
	} else {
		fmt.Fprintf(s.in, "source %s\necho %s\n", f, walkDone)
	}
	var got []string
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				s.fail(b, got, "the shell exited: a command of the block failed")
			}
			if l == walkDone {
				if b.refused {
					s.checkRefused(b, f, got)
				} else {
					s.t.Logf("%s: docs/deploy.md:%d ran: %s", s.name, b.line, lastLine(strings.Join(got, "\n")))
				}
				return
			}
			got = append(got, l)
			fmt.Fprintln(s.log, l)
		case <-deadline:
			s.fail(b, got, fmt.Sprintf("the block did not finish within %v", within))
		}
	}
}

func (s *hostShell) checkRefused(b walkBlock, f string, got []string) {
	s.t.Helper()
	res := strings.Join(got, " ")
	out, _ := os.ReadFile(f + ".out")
	switch {
	case strings.HasPrefix(res, "ran"):
		s.fail(b, got, "a command the page says is refused succeeded:\n"+string(out))
	case strings.Contains(res, "refused 124"):
		s.fail(b, got, "a command the page says is refused kept running instead:\n"+string(out))
	case !strings.Contains(string(out), "--"):
		s.fail(b, got, "the refusal names no flag to fix:\n"+string(out))
	}
	s.t.Logf("%s: refused as the page says: %s", s.name, lastLine(string(out)))
}

func (s *hostShell) fail(b walkBlock, got []string, why string) {
	s.t.Helper()
	stderr, _ := os.ReadFile(s.log.Name())
	logs := ""
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") && e.Name() != "shell.log" {
			b, _ := os.ReadFile(filepath.Join(s.dir, e.Name()))
			logs += fmt.Sprintf("--- %s (tail)\n%s\n", e.Name(), tailOf(b, 1500))
		}
	}
	s.t.Fatalf("docs/deploy.md:%d (%s, on %s): %s\nblock:\n%s\noutput:\n%s\nshell (stderr and output):\n%s\n%s",
		b.line, b.walk, s.name, why, b.text, strings.Join(got, "\n"), tailOf(stderr, 3000), logs)
}

// TestDeployWalkthrough runs the cluster-by-hand walk-through of
// docs/deploy.md as written: the one-machine cluster in one network
// namespace, then the three-host cluster in three, each block in the shell
// of the host it names, in the page's order. A command that fails, or a
// refusal that does not come, fails the test at that block, so the page
// cannot drift from the code.
func TestDeployWalkthrough(t *testing.T) {
	if why := CanMakeNamespaces(); why != "" {
		t.Skip(why)
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: the walk-through mounts the cluster")
	}
	for _, tool := range []string{"/usr/bin/aws", "curl", "mountpoint"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (scripts/test-deps.sh installs awscli, curl, util-linux)", tool)
		}
	}
	blocks := walkBlocks(t, "../../docs/deploy.md")
	byWalk := map[string][]walkBlock{}
	for _, b := range blocks {
		byWalk[b.walk] = append(byWalk[b.walk], b)
	}
	if len(byWalk["one-machine"]) == 0 || len(byWalk["three-hosts"]) == 0 {
		t.Fatalf("docs/deploy.md has no one-machine or three-hosts walk-through blocks (%d blocks)", len(blocks))
	}
	binDir := filepath.Dir(Binary(t))

	t.Run("one-machine", func(t *testing.T) {
		n := NewNet(t)
		h := n.AddHost("machine")
		dir := t.TempDir()
		sh := startShell(t, h, dir, binDir)
		t.Cleanup(func() { stopWalk(n, filepath.Join(dir, "mnt")) })
		for _, b := range byWalk["one-machine"] {
			sh.run(b, 3*time.Minute)
		}
	})

	t.Run("three-hosts", func(t *testing.T) {
		n := NewNet(t)
		var hosts []*Host
		var env []string
		for i := 1; i <= 3; i++ {
			h := n.AddHost(fmt.Sprintf("host%d", i))
			hosts = append(hosts, h)
			env = append(env, fmt.Sprintf("HOST%d=%s", i, h.IP))
		}
		root := t.TempDir()
		var shells []*hostShell
		for i, h := range hosts {
			shells = append(shells, startShell(t, h, filepath.Join(root, h.Name), binDir, append(env, fmt.Sprintf("N=%d", i+1))...))
		}
		t.Cleanup(func() { stopWalk(n, filepath.Join(root, "host3", "mnt")) })
		for _, b := range byWalk["three-hosts"] {
			copyClusterFiles(t, shells)
			for i, sh := range shells {
				if b.host == "all" || b.host == fmt.Sprint(i+1) {
					sh.run(b, 3*time.Minute)
				}
			}
		}
	})
}

// copyClusterFiles stands in for the page's "copy token and master.key to
// hosts 2 and 3".
func copyClusterFiles(t *testing.T, shells []*hostShell) {
	for _, name := range []string{"token", "master.key"} {
		b, err := os.ReadFile(filepath.Join(shells[0].dir, name))
		if err != nil {
			continue
		}
		for _, sh := range shells[1:] {
			if _, err := os.Stat(filepath.Join(sh.dir, name)); err != nil {
				if err := os.WriteFile(filepath.Join(sh.dir, name), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// stopWalk unmounts the walk-through's mount and kills what its shells
// started in the hosts' namespaces.
func stopWalk(n *Net, mnt string) {
	exec.Command("umount", "-l", mnt).Run()
	for _, h := range n.Hosts() {
		out, _ := exec.Command("ip", "netns", "pids", h.NS).Output()
		for _, pid := range strings.Fields(string(out)) {
			exec.Command("kill", "-9", pid).Run()
		}
	}
}
