package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestServerMetricsAndJSONLog runs `flyfs server --metrics-addr ...
// --log-format json`: its /metrics serves every role's families labelled by
// role, in the standard exposition, and every line it logs is one JSON
// object.
func TestServerMetricsAndJSONLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	out, logs := &syncWriter{w: &bytes.Buffer{}}, &syncWriter{w: &bytes.Buffer{}}
	cmd := rootCmd()
	cmd.SetOut(out)
	cmd.SetErr(logs)
	cmd.SetArgs([]string{"server", "--data", filepath.Join(dir, "data"), "--mgmtd-addr", freeLoopback(t), "--metad-addr", freeLoopback(t),
		"--s3-addr", "127.0.0.1:0", "--console-addr", "", "--chains", "2", "--no-sync", "--token", testToken,
		"--metrics-addr", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	re := regexp.MustCompile(`metrics +(http://\S+/metrics)`)
	var url string
	for url == "" {
		select {
		case err := <-done:
			t.Fatalf("server exited: %v\n%s\n%s", err, out, logs)
		case <-time.After(50 * time.Millisecond):
		}
		// The last line comes once every front end is up.
		if m := re.FindStringSubmatch(out.String()); m != nil && strings.Contains(out.String(), "  try: ") {
			url = m[1]
		}
	}
	get := func() map[string]*dto.MetricFamily {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("Content-Type %q", ct)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return fams
	}
	// One S3 request (anonymous: refused), which the gateway counts on the
	// server's registry as role=gateway.
	s3 := regexp.MustCompile(`  s3 +(http://[^/\s]+)/`).FindStringSubmatch(out.String())
	if s3 == nil {
		t.Fatalf("no s3 address in:\n%s", out)
	}
	resp, err := http.Get(s3[1] + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	fams := get()
	roles := map[string]bool{}
	for name, f := range fams {
		if !strings.HasPrefix(name, "flyfs_") {
			continue
		}
		for _, m := range f.Metric {
			for _, lp := range m.Label {
				if lp.GetName() == "role" {
					roles[lp.GetValue()] = true
				}
			}
		}
	}
	for _, r := range []string{"mgmtd", "metad", "storaged", "client", "gateway"} {
		if !roles[r] {
			t.Errorf("no family labelled role=%s (roles: %v)", r, roles)
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "flyfs_mgmtd_primary", "flyfs_rpc_server_calls_total", "flyfs_s3_requests_total", "flyfs_s3_request_duration_seconds"} {
		if fams[name] == nil {
			t.Errorf("no family %s", name)
		}
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatal("nothing logged")
	}
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON (%v): %s", err, line)
		}
		if rec["msg"] == nil || rec["level"] == nil || rec["time"] == nil {
			t.Fatalf("a log line lacks time, level or msg: %s", line)
		}
	}
}
