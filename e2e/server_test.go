package e2e

import (
	"bytes"
	"context"
	"io"
	iofs "io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/client"
)

// TestServerProcessAndAdminFsck runs `flyfs server` as a child process,
// writes a file through a client that finds metad through mgmtd, checks the
// namespace with `flyfs admin fsck`, kills the server with SIGKILL, restarts
// it on the same data directory and reads the file back.
func TestServerProcessAndAdminFsck(t *testing.T) {
	bin := flyfsBinary(t)
	dir := t.TempDir()
	mgmtd, metad := freeAddr(t), freeAddr(t)
	start := func() *proc {
		p := startProc(t, bin, filepath.Join(dir, "server.log"), "server", "--data", dir, "--mgmtd-addr", mgmtd, "--metad-addr", metad, "--chains", "4", "--console-addr", "127.0.0.1:0")
		waitListening(t, metad)
		return p
	}
	p := start()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The server draws its cluster token on the first start, readable by
	// its owner only, and refuses clients without it.
	tokenFile := filepath.Join(dir, cluster.TokenFile)
	if st, err := os.Stat(tokenFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st, err)
	}
	token, err := cluster.ReadToken(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Dial(ctx, client.Config{Mgmtd: []string{mgmtd}}); err == nil || !strings.Contains(err.Error(), "missing cluster token") {
		t.Fatalf("a client without the token: %v", err)
	}
	if _, err := client.Dial(ctx, client.Config{Mgmtd: []string{mgmtd}, Token: "wrong"}); err == nil || !strings.Contains(err.Error(), "wrong cluster token") {
		t.Fatalf("a client with a wrong token: %v", err)
	}
	fs, err := client.Dial(ctx, client.Config{Mgmtd: []string{mgmtd}, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll(ctx, "/data/train", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create(ctx, "/data/train/shard-0", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("flyfs!"), 500_000) // 3 MB
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	fs.Close()

	fsck := func() string {
		out, err := exec.Command(bin, "admin", "--mgmtd", mgmtd, "--token-file", tokenFile, "--timeout", "30s", "fsck").CombinedOutput()
		if err != nil {
			t.Fatalf("flyfs admin fsck: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := fsck(); !strings.Contains(out, "clean") {
		t.Fatalf("fsck output: %s", out)
	}

	p.kill()
	start()
	if again, _ := cluster.ReadToken(tokenFile); again != token {
		t.Fatalf("the token changed across a restart: %q, was %q", again, token)
	}
	fs, err = client.Dial(ctx, client.Config{Mgmtd: []string{mgmtd}, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	r, err := fs.Open(ctx, "/data/train/shard-0")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if n, err := r.ReadAt(got, 0); n != len(data) || (err != nil && err != io.EOF) || !bytes.Equal(got, data) {
		t.Fatalf("after kill -9 and restart: read %d bytes (%v), equal %v", n, err, bytes.Equal(got, data))
	}
	if out := fsck(); !strings.Contains(out, "clean") {
		t.Fatalf("fsck after restart: %s", out)
	}
}

// TestServerKeepsSecretsPrivate: what flyfs server keeps on disk is its
// owner's only (directories 0700, files 0600), and no access key's secret is
// in any of its bytes, write-ahead logs included.
func TestServerKeepsSecretsPrivate(t *testing.T) {
	bin := flyfsBinary(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	mgmtd, metad := freeAddr(t), freeAddr(t)
	p := startProc(t, bin, filepath.Join(dir, "server.log"), "server", "--data", data, "--mgmtd-addr", mgmtd, "--metad-addr", metad,
		"--chains", "2", "--s3-addr", "", "--console-addr", "")
	waitListening(t, metad)
	token, err := cluster.ReadToken(filepath.Join(data, cluster.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fs, err := client.Dial(ctx, client.Config{Mgmtd: []string{mgmtd}, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	secret := "needle-" + strings.Repeat("s3cr3t", 6)
	if _, err := fs.Keys().Create(ctx, access.Key{ID: "FLYNEEDLE", Secret: secret, Buckets: map[string]access.Permission{"*": access.Read}}); err != nil {
		t.Fatal(err)
	}
	root, _, err := fs.Keys().EnsureRoot(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.kill() // whatever is on disk now is what an attacker reading the disk finds
	err = filepath.WalkDir(data, func(path string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() && info.Mode().Perm() != 0o700 || !d.IsDir() && info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v: readable by others", path, info.Mode().Perm())
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range []string{secret, root.Secret} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds a secret in plain text", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
