package mdtest

import (
	"bytes"
	"context"
	"testing"

	"github.com/flyfs/flyfs/e2e/harness"
)

func TestAgainstCluster(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 2}, Metads: 2})
	for _, shared := range []bool{false, true} {
		cfg := Defaults()
		cfg.Mgmtd, cfg.Token, cfg.Clients, cfg.Threads, cfg.Files, cfg.SharedDir, cfg.Dir = c.MgmtdAddrs(), c.Token, 3, 2, 20, shared, "/runs"
		rep, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("shared %v: %v", shared, err)
		}
		for _, name := range []string{"create", "stat", "rename", "unlink"} {
			p, ok := rep.Phase(name)
			if !ok || p.Ops != 3*2*20 || p.Latency.P50US <= 0 || p.Workers != 6 {
				t.Fatalf("shared %v: phase %s: %+v", shared, name, p)
			}
		}
		var tb bytes.Buffer
		rep.WriteTable(&tb)
		t.Logf("\n%s", tb.String())
	}
	// Both runs cleaned up after themselves.
	ents, err := c.FS().ReadDir(context.Background(), "/runs")
	if err != nil || len(ents) != 0 {
		t.Fatalf("left behind: %v, %v", ents, err)
	}
}

func TestBadConfig(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"no mgmtd":     func(c *Config) { c.Mgmtd = nil },
		"no clients":   func(c *Config) { c.Clients = 0 },
		"no files":     func(c *Config) { c.Files = 0 },
		"relative dir": func(c *Config) { c.Dir = "x" },
	} {
		c := Defaults()
		c.Mgmtd = []string{"127.0.0.1:1"}
		mod(&c)
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
