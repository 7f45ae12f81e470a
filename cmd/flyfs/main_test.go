package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/kv/kvopen"
)

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

func TestPendingRoleSaysSoAndFails(t *testing.T) {
	_, err := run(t, "metad", "--data", "/x")
	if err == nil || !strings.Contains(err.Error(), "not built yet") {
		t.Fatalf("metad: %v", err)
	}
	out, err := run(t, "mount", "--help")
	if err != nil || !strings.Contains(out, "Mount flyfs") {
		t.Fatalf("mount --help: %q %v", out, err)
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

// TestServerKeepsClusterAcrossRestart starts the server twice on one --data:
// the second start finds the cluster the first created.
func TestServerKeepsClusterAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ids := make([]string, 2)
	for i := range ids {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runServer(ctx, dir, kvopen.Config{Engine: "pebble"}) }()
		time.Sleep(200 * time.Millisecond)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		db, err := kvopen.Open(context.Background(), kvopen.Config{Engine: "pebble", Dir: dir + "/meta"})
		if err != nil {
			t.Fatal(err)
		}
		ids[i], _, err = clusterID(context.Background(), db)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if ids[0] == "" || ids[0] != ids[1] {
		t.Fatalf("cluster id changed across a restart: %q then %q", ids[0], ids[1])
	}
}
