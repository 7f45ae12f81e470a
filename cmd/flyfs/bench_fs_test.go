package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchFSJSON runs `flyfs bench fs --json` on a temp dir with tiny sizes
// and checks the report has every phase, with numbers in it.
func TestBenchFSJSON(t *testing.T) {
	cmd := rootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"bench", "fs", t.TempDir(), "--json", "--threads", "2", "--big-size", "128k", "--block-size", "32k",
		"--small-count", "20", "--small-size", "4k", "--rand-duration", "100ms", "--progress", "never"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var rep struct {
		Benchmark string         `json:"benchmark"`
		Params    map[string]any `json:"params"`
		Phases    []struct {
			Name      string  `json:"name"`
			Ops       int64   `json:"ops"`
			OpsPerSec float64 `json:"ops_per_sec"`
			MiBPerSec float64 `json:"mib_per_sec"`
			Latency   struct {
				P50  float64 `json:"p50_us"`
				P999 float64 `json:"p999_us"`
			} `json:"latency"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if rep.Benchmark != "fs" || rep.Params["block_size"] != "32KiB" {
		t.Errorf("header: %+v", rep)
	}
	got := map[string]bool{}
	for _, p := range rep.Phases {
		got[p.Name] = true
		if p.Ops == 0 || p.OpsPerSec <= 0 || p.Latency.P50 <= 0 || p.Latency.P999 < p.Latency.P50 {
			t.Errorf("%s: no ops measured", p.Name)
		}
	}
	for _, want := range []string{"seq-write", "seq-read", "rand-read", "small-write", "small-stat", "small-read", "small-delete"} {
		if !got[want] {
			t.Errorf("JSON lacks phase %s:\n%s", want, out.String())
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("--progress never still drew: %q", errOut.String())
	}
}

func TestBenchFSBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "fs"},
		{"bench", "fs", t.TempDir(), "--big-size", "lots"},
		{"bench", "fs", t.TempDir(), "--cache", "maybe"},
		{"bench", "fs", t.TempDir(), "--progress", "sometimes"},
	} {
		if out, err := run(t, args...); err == nil {
			t.Errorf("%s: accepted:\n%s", strings.Join(args, " "), out)
		}
	}
}
