package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv/kvopen"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// String is what was written so far.
func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func freeLoopback(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// testToken is the cluster token of the servers these tests run.
const testToken = "main-test-token"

// fileRoundTrip writes the file on the first start and reads it on every one.
func fileRoundTrip(t *testing.T, mgmtdAddr, metadAddr string, write bool, want []byte) {
	t.Helper()
	ctx := context.Background()
	rc := rpc.NewClient(rpc.Options{Token: testToken})
	defer rc.Close()
	src, err := client.NewMgmtdSource(ctx, []string{mgmtdAddr}, rc, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fs := client.NewFS(src, rc, []string{metadAddr}, client.NewChunkIO(src, rc, 20*time.Second))
	if write {
		f, err := fs.Create(ctx, "/ckpt", 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(want, 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	f, err := fs.Open(ctx, "/ckpt")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if n, err := f.ReadAt(got, 0); n != len(want) || (err != nil && err != io.EOF) || !bytes.Equal(got, want) {
		t.Fatalf("read %d of %d bytes back (%v)", n, len(want), err)
	}
}

// waitServing waits until mgmtd at addr publishes n chains, all serving.
func waitServing(t *testing.T, addr string, n int) *routing.Info {
	t.Helper()
	rc := rpc.NewClient(rpc.Options{Token: testToken})
	defer rc.Close()
	m := client.NewMgmtd(rc, []string{addr})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := m.GetRouting(ctx, 0)
		cancel()
		if err == nil && resp.Info != nil && len(resp.Info.Chains) == n {
			ok := true
			for _, c := range resp.Info.Chains {
				for _, tg := range c.Targets {
					ok = ok && tg.Public == routing.Serving
				}
			}
			if ok {
				return resp.Info
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("chains on %s never all served", addr)
	return nil
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := rootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestHelpListsEveryRole(t *testing.T) {
	out, err := run(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"server", "mgmtd", "metad", "storaged", "gateway", "mount", "admin", "bench", "version"} {
		if !strings.Contains(out, "\n  "+sub+" ") {
			t.Errorf("--help does not list %q:\n%s", sub, out)
		}
	}
}

func TestVersion(t *testing.T) {
	out, err := run(t, "version")
	if err != nil || !strings.HasPrefix(out, "flyfs ") || !strings.Contains(out, "go1.") {
		t.Fatalf("version printed %q, %v", out, err)
	}
}

func TestEveryRoleHasItsCommand(t *testing.T) {
	for _, role := range []string{"server", "mgmtd", "metad", "storaged", "gateway", "mount", "umount", "console", "admin", "bench"} {
		out, err := run(t, role, "--help")
		if err != nil || !strings.Contains(out, "Usage:") {
			t.Fatalf("%s --help: %q %v", role, out, err)
		}
	}
}

func TestUnknownEngineIsNamed(t *testing.T) {
	_, err := run(t, "server", "--data", t.TempDir(), "--kv", "redis")
	if err == nil || !strings.Contains(err.Error(), `unknown kv engine "redis"`) {
		t.Fatalf("got %v", err)
	}
}

func TestEnvironmentSetsFlags(t *testing.T) {
	t.Setenv("FLYFS_KV", "nosuch")
	_, err := run(t, "server", "--data", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Fatalf("FLYFS_KV was not used: %v", err)
	}
}

// TestServerRestartsOnItsData starts the server twice on one --data: the
// second start finds the cluster, the chains the first created, and its
// storage serving again.
func TestServerRestartsOnItsData(t *testing.T) {
	dir := t.TempDir()
	var ids []string
	want := bytes.Repeat([]byte("checkpoint "), 300_000) // 3.3 MB: several chunks
	for i := 0; i < 2; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		var out bytes.Buffer
		done := make(chan error, 1)
		addr, maddr := freeLoopback(t), freeLoopback(t)
		go func() {
			done <- runServer(ctx, serverOptions{dataDir: dir, kvc: kvopen.Config{Engine: "pebble"}, mgmtdAddr: addr,
				metadAddr: maddr, disks: 2, replicas: 2, chains: 3, noSync: true, tok: tokenOptions{token: testToken}}, &syncWriter{w: &out})
		}()
		info := waitServing(t, addr, 3)
		fileRoundTrip(t, addr, maddr, i == 0, want)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(info.Chains) != 3 {
			t.Fatalf("start %d: %d chains", i, len(info.Chains))
		}
		ids = append(ids, out.String())
	}
	if !strings.Contains(ids[0], "(new: true)") || !strings.Contains(ids[1], "(new: false)") {
		t.Fatalf("the second start did not find the first's cluster:\n%s\n%s", ids[0], ids[1])
	}
}
