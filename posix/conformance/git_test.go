package conformance

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needProgram returns the path of a program the test drives, skipping the
// test (naming the Debian package that has it) when it is not installed.
func needProgram(t *testing.T, name, debPackage string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed: it is in the Debian package %s (scripts/test-deps.sh installs it)", name, debPackage)
	}
	return p
}

// gitRunner runs git with a configuration of its own: no system or user
// configuration, a fixed identity, and no automatic (background) gc, which
// could still be writing when the test removes the repository.
// git changes into the repository itself (git -C), never through
// exec.Cmd.Dir: see dir.
type gitRunner struct {
	t    *testing.T
	bin  string
	home string
}

func newGit(t *testing.T) *gitRunner {
	return &gitRunner{t: t, bin: needProgram(t, "git", "git"), home: t.TempDir()}
}

// in runs git in dir and returns its standard output; a failure fails the
// test with what git printed.
func (g *gitRunner) in(dir string, args ...string) string {
	g.t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := g.command(dir, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		g.t.Fatalf("git %s (in %s): %v\n%s%s", strings.Join(args, " "), dir, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// command is git running args in dir, in the tests' configuration.
func (g *gitRunner) command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(g.bin, append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(),
		"HOME="+g.home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=flyfs", "GIT_AUTHOR_EMAIL=flyfs@example.com",
		"GIT_COMMITTER_NAME=flyfs", "GIT_COMMITTER_EMAIL=flyfs@example.com",
		"GIT_CONFIG_COUNT=4",
		"GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
		"GIT_CONFIG_KEY_1=gc.autoDetach", "GIT_CONFIG_VALUE_1=false",
		"GIT_CONFIG_KEY_2=maintenance.auto", "GIT_CONFIG_VALUE_2=false",
		"GIT_CONFIG_KEY_3=init.defaultBranch", "GIT_CONFIG_VALUE_3=main",
		"LC_ALL=C",
	)
	return cmd
}

// fsck runs git fsck --full --strict in repo and fails the test on
// anything it reports, dangling objects included (none of the repositories
// here leaves any behind).
func (g *gitRunner) fsck(repo, what string) {
	g.t.Helper()
	var out bytes.Buffer
	cmd := g.command(repo, "fsck", "--full", "--strict", "--no-progress")
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil || out.Len() > 0 {
		g.t.Errorf("git fsck of %s: %v\n%s", what, err, out.String())
	}
}

// refs lists a repository's refs, one "object name refname" a line.
func (g *gitRunner) refs(repo string, patterns ...string) string {
	g.t.Helper()
	return g.in(repo, append([]string{"for-each-ref", "--format=%(objectname) %(refname)"}, patterns...)...)
}

func write(t *testing.T, p string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// sourceRepo makes a repository on the local disk: three commits on main
// (one with a file crossing the mount's chunks), a branch with a commit of
// its own, an annotated and a lightweight tag, an executable file and a
// symlink.
func sourceRepo(t *testing.T, g *gitRunner) string {
	src := filepath.Join(t.TempDir(), "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	g.in(src, "init", "-q")
	write(t, filepath.Join(src, "README"), []byte("flyfs git round trip\n"), 0o644)
	write(t, filepath.Join(src, "bin/run.sh"), []byte("#!/bin/sh\necho run\n"), 0o755)
	if err := os.Symlink("bin/run.sh", filepath.Join(src, "run")); err != nil {
		t.Fatal(err)
	}
	g.in(src, "add", "-A")
	g.in(src, "commit", "-q", "-m", "first")
	g.in(src, "tag", "-a", "v1", "-m", "version 1")

	var big bytes.Buffer
	for i := 0; big.Len() < 400_000; i++ { // several 64 KiB chunks, compressible
		big.WriteString(strings.Repeat(string(rune('a'+i%26)), i%97+1))
		big.WriteByte('\n')
	}
	write(t, filepath.Join(src, "data/big.txt"), big.Bytes(), 0o644)
	g.in(src, "add", "-A")
	g.in(src, "commit", "-q", "-m", "second: a big file")

	g.in(src, "checkout", "-q", "-b", "feature")
	write(t, filepath.Join(src, "feature.txt"), []byte("on the branch\n"), 0o600)
	g.in(src, "add", "-A")
	g.in(src, "commit", "-q", "-m", "on feature")
	g.in(src, "tag", "light")

	g.in(src, "checkout", "-q", "main")
	write(t, filepath.Join(src, "README"), []byte("flyfs git round trip\nthird\n"), 0o644)
	g.in(src, "commit", "-q", "-am", "third")
	g.fsck(src, "the source")
	return src
}

// TestGitRoundTrip: a repository cloned into the mount passes git fsck, its
// branch checks out with the executable bit and the symlink, a commit, a gc
// and a repack made on the mount keep it clean, and a mirror cloned back
// out of the mount has the same refs as the clone on the mount, whose
// remote refs and tags are the source's.
func TestGitRoundTrip(t *testing.T) {
	d := dir(t)
	t.Cleanup(func() { os.RemoveAll(d) })
	g := newGit(t)
	src := sourceRepo(t, g)

	// --no-local: through the pack protocol, as from a server, so
	// index-pack writes the pack and its index on the mount.
	clone := filepath.Join(d, "clone")
	g.in(d, "clone", "-q", "--no-local", src, clone)
	g.fsck(clone, "the clone on the mount")
	if got, want := g.refs(clone, "refs/remotes/origin/main", "refs/remotes/origin/feature", "refs/tags"),
		g.refs(src, "refs/heads/main", "refs/heads/feature", "refs/tags"); strings.ReplaceAll(got, "refs/remotes/origin/", "refs/heads/") != want {
		t.Errorf("the clone's refs:\n%s\nthe source's:\n%s", got, want)
	}
	if out := g.in(clone, "status", "--porcelain"); out != "" {
		t.Errorf("a fresh clone is not clean:\n%s", out)
	}

	log := g.in(clone, "log", "--format=%s", "origin/feature")
	if want := "on feature\nsecond: a big file\nfirst\n"; log != want {
		t.Errorf("git log origin/feature:\n%s\nwant:\n%s", log, want)
	}
	g.in(clone, "checkout", "-q", "feature")
	if got := mustRead(t, filepath.Join(clone, "feature.txt")); got != "on the branch\n" {
		t.Errorf("feature.txt: %q", got)
	}
	if st, err := os.Stat(filepath.Join(clone, "bin/run.sh")); err != nil || st.Mode().Perm()&0o111 == 0 {
		t.Errorf("bin/run.sh is not executable: %v %v", st.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(clone, "run")); err != nil || target != "bin/run.sh" {
		t.Errorf("the symlink run: %q %v", target, err)
	}
	if out := g.in(clone, "status", "--porcelain"); out != "" {
		t.Errorf("after checking out feature:\n%s", out)
	}
	if got, want := g.in(clone, "rev-parse", "HEAD^{tree}"), g.in(src, "rev-parse", "feature^{tree}"); got != want {
		t.Errorf("feature's tree %s, the source's %s", got, want)
	}

	// A commit on the mount: a changed file, a new one, a removed one, a
	// mode change and a new symlink; then gc packs everything (loose
	// objects, refs) and a full repack rewrites the pack.
	g.in(clone, "checkout", "-q", "-b", "onmount", "main")
	write(t, filepath.Join(clone, "README"), []byte("changed on the mount\n"), 0o644)
	write(t, filepath.Join(clone, "new/tool.sh"), []byte("#!/bin/sh\necho new\n"), 0o755)
	if err := os.Remove(filepath.Join(clone, "data/big.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(clone, "bin/run.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("new/tool.sh", filepath.Join(clone, "tool")); err != nil {
		t.Fatal(err)
	}
	g.in(clone, "add", "-A")
	g.in(clone, "commit", "-q", "-m", "made on the mount")
	head := g.in(clone, "rev-parse", "HEAD")
	if out := g.in(clone, "status", "--porcelain"); out != "" {
		t.Errorf("after the commit on the mount:\n%s", out)
	}
	g.fsck(clone, "the clone after a commit on the mount")
	g.in(clone, "gc", "-q", "--prune=now")
	g.fsck(clone, "the clone after git gc")
	g.in(clone, "repack", "-q", "-a", "-d", "-f")
	g.fsck(clone, "the clone after git repack -a -d -f")
	if got := g.in(clone, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD %s after gc, was %s", got, head)
	}
	sameInCluster(t, clone)
	show := g.in(clone, "show", "--format=%s", "--name-status", "HEAD") + g.in(clone, "show", "--format=", "--summary", "HEAD")
	for _, want := range []string{"made on the mount", "M\tREADME", "D\tdata/big.txt", "A\tnew/tool.sh", "A\ttool",
		"mode change 100755 => 100644 bin/run.sh", "create mode 100755 new/tool.sh", "create mode 120000 tool"} {
		if !strings.Contains(show, want) {
			t.Errorf("git show HEAD has no %q:\n%s", want, show)
		}
	}

	// Back out of the mount, through the pack protocol again (pack-objects
	// reads the packs on the mount).
	back := filepath.Join(t.TempDir(), "back.git")
	g.in(t.TempDir(), "clone", "-q", "--mirror", "--no-local", clone, back)
	g.fsck(back, "the mirror cloned out of the mount")
	if got, want := g.refs(back), g.refs(clone); got != want {
		t.Errorf("the mirror's refs:\n%s\nthe clone's on the mount:\n%s", got, want)
	}
	for _, ref := range []string{"main", "feature", "v1", "v1^{commit}", "light", "main^{tree}", "feature~1^{tree}"} {
		if got, want := g.in(back, "rev-parse", ref), g.in(src, "rev-parse", ref); got != want {
			t.Errorf("%s: %s in the mirror, %s in the source", ref, strings.TrimSpace(got), strings.TrimSpace(want))
		}
	}
	if got := g.in(back, "rev-parse", "onmount"); got != head {
		t.Errorf("onmount: %s in the mirror, %s on the mount", got, head)
	}
}
