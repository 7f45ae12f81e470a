package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/e2e/harness"
)

func TestBenchMdtestJSON(t *testing.T) {
	if _, err := run(t, "bench", "mdtest", "--token", "x"); err == nil || !strings.Contains(err.Error(), "--mgmtd") {
		t.Errorf("no --mgmtd: %v", err)
	}
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 2}})
	cmd := rootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"bench", "mdtest", "--mgmtd", strings.Join(c.MgmtdAddrs(), ","), "--token", c.Token,
		"--clients", "2", "--threads", "2", "-n", "10", "--json", "--progress", "never"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	for _, name := range []string{"create", "stat", "rename", "unlink"} {
		if p, ok := rep.Phase(name); !ok || p.Ops != 40 {
			t.Errorf("phase %s: %+v", name, p)
		}
	}
	// The in-process `bench meta` is still there beside it.
	if _, err := run(t, "bench", "meta", "--help"); err != nil {
		t.Error(err)
	}
}
