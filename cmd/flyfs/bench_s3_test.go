package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/gateway"
)

// TestBenchS3JSON runs `flyfs bench s3 --json` against the real gateway, the
// keys coming from FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY.
func TestBenchS3JSON(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "")
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 2}, ChunkSize: 1 << 20})
	gw, err := gateway.New(gateway.Config{FS: c.FS(), RootAccessKey: "AK", RootSecretKey: "SK",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gw}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close(); gw.Close() })

	t.Setenv("FLYFS_ACCESS_KEY", "AK")
	t.Setenv("FLYFS_SECRET_KEY", "SK")
	cmd := rootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"bench", "s3", "--endpoint", "http://" + l.Addr().String(), "--bucket", "bench-cli", "--objects", "12",
		"--size", "20k", "-c", "3", "--lists", "2", "--json", "--progress", "never"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	for _, name := range []string{"put", "get", "list", "delete"} {
		if p, ok := rep.Phase(name); !ok || p.Ops == 0 {
			t.Errorf("phase %s missing or empty: %s", name, out.String())
		}
	}
}
