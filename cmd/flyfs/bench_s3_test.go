package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/e2e/harness/s3gateway"
)

// TestBenchS3JSON runs `flyfs bench s3 --json` against the real gateway, the
// keys coming from FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY.
func TestBenchS3JSON(t *testing.T) {
	addr := s3gateway.Start(t, "AK", "SK")
	t.Setenv("FLYFS_ACCESS_KEY", "AK")
	t.Setenv("FLYFS_SECRET_KEY", "SK")
	cmd := rootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"bench", "s3", "--endpoint", addr, "--bucket", "bench-cli", "--objects", "12",
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
	this, other := s3gateway.Start(t, "AK", "SK"), s3gateway.Start(t, "AK", "SK")
	args := []string{"bench", "s3", "--endpoint", this, "--access-key", "AK", "--secret-key", "SK", "--bucket", "bench-this",
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
	out, err := run("--json", "--baseline-endpoint", other, "--baseline-access-key", "AK", "--baseline-secret-key", "SK")
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
	out, err = run("--baseline-endpoint", other, "--baseline-access-key", "AK", "--baseline-secret-key", "SK", "--baseline-bucket", "bench-other")
	if err != nil || !strings.Contains(out, "ratio") || !strings.Contains(out, "bench-other") {
		t.Fatalf("table: %v\n%s", err, out)
	}
	for _, bad := range [][]string{
		{"--baseline-endpoint", other},
		{"--baseline-access-key", "AK"},
	} {
		if out, err := run(bad...); err == nil || !strings.Contains(err.Error(), "--baseline") {
			t.Errorf("%v accepted (%v):\n%s", bad, err, out)
		}
	}
}
