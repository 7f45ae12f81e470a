package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/gateway"
)

// TestBenchS3JSON runs `flyfs bench s3 --json` against the real gateway, the
// keys coming from FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY.
func TestBenchS3JSON(t *testing.T) {
	addr := startBenchGateway(t)
	t.Setenv("FLYFS_ACCESS_KEY", "AK")
	t.Setenv("FLYFS_SECRET_KEY", "SK")
	cmd := rootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"bench", "s3", "--endpoint", "http://" + addr, "--bucket", "bench-cli", "--objects", "12",
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

// TestBenchS3Baseline runs the load against a second endpoint (here a second
// gateway) after the first and reports both and their ratios; baseline flags
// without what they need are refused.
func TestBenchS3Baseline(t *testing.T) {
	this, other := startBenchGateway(t), startBenchGateway(t)
	args := []string{"bench", "s3", "--endpoint", "http://" + this, "--access-key", "AK", "--secret-key", "SK", "--bucket", "bench-this",
		"--objects", "6", "--size", "20k", "-c", "2", "--lists", "0", "--progress", "never"}
	run := func(extra ...string) (string, error) {
		cmd := rootCmd()
		var out, errOut bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append(append([]string(nil), args...), extra...))
		err := cmd.Execute()
		return out.String() + errOut.String(), err
	}
	out, err := run("--json", "--baseline-endpoint", "http://"+other, "--baseline-access-key", "AK", "--baseline-secret-key", "SK")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got struct {
		This, Baseline bench.Report
		Ratios         []struct {
			Phase       string
			This, Ratio float64
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got.This.Target == got.Baseline.Target || len(got.Ratios) != 3 {
		t.Fatalf("want both runs and 3 ratios (put, get, delete): %s", out)
	}
	for _, r := range got.Ratios {
		if r.This <= 0 || r.Ratio <= 0 {
			t.Errorf("ratio row %+v", r)
		}
	}
	out, err = run("--baseline-endpoint", "http://"+other, "--baseline-access-key", "AK", "--baseline-secret-key", "SK", "--baseline-bucket", "bench-other")
	if err != nil || !strings.Contains(out, "ratio") || !strings.Contains(out, "bench-other") {
		t.Fatalf("table: %v\n%s", err, out)
	}
	for _, bad := range [][]string{
		{"--baseline-endpoint", "http://" + other},
		{"--baseline-access-key", "AK"},
	} {
		if out, err := run(bad...); err == nil || !strings.Contains(err.Error(), "--baseline") {
			t.Errorf("%v accepted (%v):\n%s", bad, err, out)
		}
	}
}

// startBenchGateway serves a gateway (keys AK/SK) over a fresh cluster and
// returns its address.
func startBenchGateway(t *testing.T) string {
	t.Helper()
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
	return l.Addr().String()
}
