package frontend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/cluster/frontend"
	"github.com/flyfs/flyfs/core/observe"
	"github.com/flyfs/flyfs/gateway"
	"github.com/flyfs/flyfs/posix/fusefs"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sys/unix"
)

// scrape fetches url and parses the exposition with expfmt.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// sum adds the values of family name's series whose labels include want
// (counter, gauge, or a histogram's sample count).
func sum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	var total float64
next:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			total += m.Untyped.GetValue()
		}
	}
	return total
}

func l(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// TestEveryRoleServesMetrics runs an in-process cluster (two storage nodes,
// chains of two, a metad, the S3 gateway, a FUSE mount where FUSE is
// usable) with metrics on, scrapes its /metrics endpoint before and after
// writing and reading a few files through the client, the mount and S3,
// and checks that every role's families exist with their types and role
// label, and that the ones a load moves moved.
func TestEveryRoleServesMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := observe.NewRegistry()
	c, err := cluster.Start(ctx, cluster.Config{Dir: t.TempDir(), NoSync: true, Nodes: 2, Replicas: 2, Chains: 2, Metads: 1,
		HeartbeatTimeout: time.Second, ScanInterval: 100 * time.Millisecond, GCGrace: -1, GCInterval: 50 * time.Millisecond, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s3addr, err := frontend.StartGateway(ctx, c, frontend.Listen{Addr: "127.0.0.1:0"}, gateway.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// The mount registers on the cluster's registry as role=mount.
	var mnt *fusefs.Mounted
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Logf("mount metrics not checked: no /dev/fuse (FUSE needs the fuse kernel module)")
	} else if mnt, err = frontend.Mount(ctx, c, t.TempDir(), fusefs.Options{}); err != nil {
		t.Logf("mount metrics not checked: cannot mount FUSE here: %v", err)
		mnt = nil
	}
	srv, err := observe.ServeMetrics("127.0.0.1:0", c.Gatherer(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := "http://" + srv.Addr() + "/metrics"
	fs, err := c.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := scrape(t, url)

	// The load: a few files written, read back, one removed (GC), one
	// missing (an errno).
	data := bytes.Repeat([]byte("flyfs metrics "), 100_000) // 1.4 MB: two chunks
	for _, p := range []string{"/a", "/b", "/c"} {
		f, err := fs.Create(ctx, p, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		g, err := fs.Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(data))
		if n, err := g.ReadAt(got, 0); n != len(data) || (err != nil && err != io.EOF) {
			t.Fatalf("read %s: %d, %v", p, n, err)
		}
		g.Close()
	}
	if err := fs.Remove(ctx, "/c"); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(ctx, "/missing"); err == nil {
		t.Fatal("stat of a missing file succeeded")
	}
	// Through the mount: a file written and read back, a refused rmdir.
	if mnt != nil {
		p := filepath.Join(mnt.Dir(), "m")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// Let go of the pages its writing left cached, so the read goes
		// through the mount.
		if f, err := os.Open(p); err == nil {
			unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
			f.Close()
		}
		if got, err := os.ReadFile(p); err != nil || len(got) != len(data) {
			t.Fatalf("read through the mount: %d bytes, %v", len(got), err)
		}
		if err := os.Mkdir(filepath.Join(mnt.Dir(), "d"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mnt.Dir(), "d", "f"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Rmdir(filepath.Join(mnt.Dir(), "d")); !errors.Is(err, syscall.ENOTEMPTY) {
			t.Fatalf("rmdir of a directory with a file: %v, want ENOTEMPTY", err)
		}
	}
	// Through S3: anonymous requests (refused, a body sent), and the S3
	// port's own metrics page, which serves the gateway's families.
	for _, r := range []struct{ method, path, body string }{{"GET", "/", ""}, {"PUT", "/b/k", "some bytes"}} {
		req, _ := http.NewRequest(r.method, "http://"+s3addr+r.path, strings.NewReader(r.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	s3page := scrape(t, "http://"+s3addr+"/_flyfs/metrics")
	for name := range s3page {
		if !strings.HasPrefix(name, "flyfs_s3_") {
			t.Errorf("the S3 port's /_flyfs/metrics serves %s: want the gateway's families only", name)
		}
	}
	if s3page["flyfs_s3_requests_total"] == nil || s3page["flyfs_s3_request_duration_seconds"] == nil {
		t.Errorf("the S3 port's /_flyfs/metrics lacks the request families: %v", s3page)
	}
	// Heartbeats, scans and the GC run on their own; give them a moment.
	deadline := time.Now().Add(10 * time.Second)
	var after map[string]*dto.MetricFamily
	for {
		after = scrape(t, url)
		if sum(after, "flyfs_metad_gc_freed_bytes_total", nil) >= float64(len(data)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	types := map[string]dto.MetricType{
		"go_goroutines": dto.MetricType_GAUGE, "process_resident_memory_bytes": dto.MetricType_GAUGE,
		// mgmtd
		"flyfs_mgmtd_primary": dto.MetricType_GAUGE, "flyfs_mgmtd_lease_changes_total": dto.MetricType_COUNTER,
		"flyfs_mgmtd_chains": dto.MetricType_GAUGE, "flyfs_mgmtd_targets": dto.MetricType_GAUGE,
		"flyfs_mgmtd_nodes": dto.MetricType_GAUGE, "flyfs_mgmtd_heartbeats_total": dto.MetricType_COUNTER,
		"flyfs_mgmtd_heartbeats_late_total": dto.MetricType_COUNTER, "flyfs_mgmtd_routing_version": dto.MetricType_GAUGE,
		"flyfs_mgmtd_kv_txns_total": dto.MetricType_COUNTER,
		// metad
		"flyfs_metad_op_duration_seconds": dto.MetricType_HISTOGRAM, "flyfs_metad_op_errors_total": dto.MetricType_COUNTER,
		"flyfs_metad_kv_txns_total": dto.MetricType_COUNTER, "flyfs_metad_kv_retries_total": dto.MetricType_COUNTER,
		"flyfs_metad_kv_conflicts_total": dto.MetricType_COUNTER, "flyfs_metad_kv_commit_duration_seconds": dto.MetricType_HISTOGRAM,
		"flyfs_metad_gc_queue_entries": dto.MetricType_GAUGE, "flyfs_metad_gc_freed_bytes_total": dto.MetricType_COUNTER,
		"flyfs_metad_write_sessions": dto.MetricType_GAUGE,
		// storaged
		"flyfs_storaged_io_ops_total": dto.MetricType_COUNTER, "flyfs_storaged_io_bytes_total": dto.MetricType_COUNTER,
		"flyfs_storaged_io_duration_seconds": dto.MetricType_HISTOGRAM, "flyfs_storaged_forwards_total": dto.MetricType_COUNTER,
		"flyfs_storaged_forward_retries_total": dto.MetricType_COUNTER, "flyfs_storaged_recovery_sent_bytes_total": dto.MetricType_COUNTER,
		"flyfs_storaged_disk_capacity_bytes": dto.MetricType_GAUGE, "flyfs_storaged_disk_free_bytes": dto.MetricType_GAUGE,
		"flyfs_storaged_checksum_failures_total": dto.MetricType_COUNTER, "flyfs_storaged_disk_state": dto.MetricType_GAUGE,
		// rpc
		"flyfs_rpc_server_calls_total": dto.MetricType_COUNTER, "flyfs_rpc_server_call_duration_seconds": dto.MetricType_HISTOGRAM,
		"flyfs_rpc_server_connections": dto.MetricType_GAUGE, "flyfs_rpc_server_inflight_bytes": dto.MetricType_GAUGE,
		"flyfs_rpc_client_calls_total": dto.MetricType_COUNTER,
		// client
		"flyfs_client_read_bytes_total": dto.MetricType_COUNTER, "flyfs_client_written_bytes_total": dto.MetricType_COUNTER,
		"flyfs_client_op_duration_seconds": dto.MetricType_HISTOGRAM, "flyfs_client_window_slots": dto.MetricType_GAUGE,
		"flyfs_client_inflight_requests": dto.MetricType_GAUGE, "flyfs_client_hedges_total": dto.MetricType_COUNTER,
		"flyfs_client_hedge_wins_total": dto.MetricType_COUNTER, "flyfs_client_relayed_writes_total": dto.MetricType_COUNTER,
		"flyfs_client_unanswered_writes_total": dto.MetricType_COUNTER, "flyfs_client_cache_hits_total": dto.MetricType_COUNTER,
		"flyfs_client_cache_misses_total": dto.MetricType_COUNTER, "flyfs_client_cache_bytes": dto.MetricType_GAUGE,
		"flyfs_client_cache_capacity_bytes": dto.MetricType_GAUGE,
		// gateway, registered on the registry given
		"flyfs_s3_requests_total": dto.MetricType_COUNTER, "flyfs_s3_request_duration_seconds": dto.MetricType_HISTOGRAM,
		"flyfs_s3_received_bytes_total": dto.MetricType_COUNTER, "flyfs_s3_sent_bytes_total": dto.MetricType_COUNTER,
	}
	if mnt != nil {
		types["flyfs_mount_op_duration_seconds"] = dto.MetricType_HISTOGRAM
		types["flyfs_mount_op_errors_total"] = dto.MetricType_COUNTER
		types["flyfs_mount_read_bytes_total"] = dto.MetricType_COUNTER
		types["flyfs_mount_written_bytes_total"] = dto.MetricType_COUNTER
	}
	for name, typ := range types {
		f := after[name]
		if f == nil {
			t.Errorf("no family %s", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is a %v, want %v", name, f.GetType(), typ)
		}
		if len(f.Metric) == 0 {
			t.Errorf("%s has no series", name)
		}
		if role, _, _ := strings.Cut(strings.TrimPrefix(name, "flyfs_"), "_"); strings.HasPrefix(name, "flyfs_") && role != "rpc" {
			want := map[string]string{"s3": "gateway"}[role]
			if want == "" {
				want = role
			}
			if sum(after, name, l("role", want)) == 0 && sum(after, name, nil) != 0 {
				t.Errorf("%s: no series labelled role=%s", name, want)
			}
		}
	}

	checkDeployNames(t, after, mnt == nil)

	// Gauges of the cluster's state.
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"flyfs_mgmtd_primary", l("role", "mgmtd"), 1},
		{"flyfs_mgmtd_chains", l("state", "healthy"), 2},
		{"flyfs_mgmtd_targets", l("public", "serving", "local", "up-to-date"), 4},
		{"flyfs_mgmtd_nodes", l("state", "alive"), 2},
		{"flyfs_storaged_disk_state", l("state", "serving"), 2},
		{"flyfs_metad_write_sessions", nil, 0},
	} {
		if got := sum(after, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if sum(after, "flyfs_storaged_disk_capacity_bytes", nil) <= 0 {
		t.Error("no disk capacity")
	}

	// What the load moved.
	written := float64(3 * len(data))
	type movedBy struct {
		name    string
		labels  map[string]string
		atLeast float64
	}
	moved := []movedBy{
		{"flyfs_client_written_bytes_total", nil, written},
		{"flyfs_client_read_bytes_total", nil, written},
		{"flyfs_client_op_duration_seconds", l("op", "write"), 3},
		{"flyfs_storaged_io_bytes_total", l("op", "write", "origin", "client"), written},
		{"flyfs_storaged_io_bytes_total", l("op", "write", "origin", "chain"), written},
		{"flyfs_storaged_io_bytes_total", l("op", "read"), written},
		{"flyfs_storaged_io_duration_seconds", l("op", "write"), 6},
		{"flyfs_storaged_forwards_total", l("result", "ok"), 6},
		{"flyfs_metad_op_duration_seconds", l("op", "Create"), 3},
		{"flyfs_metad_op_errors_total", l("errno", "ENOENT"), 1},
		{"flyfs_metad_kv_txns_total", l("type", "write", "result", "ok"), 3},
		{"flyfs_metad_kv_commit_duration_seconds", nil, 3},
		{"flyfs_metad_gc_freed_bytes_total", nil, float64(len(data))},
		{"flyfs_mgmtd_heartbeats_total", nil, 1},
		{"flyfs_mgmtd_kv_txns_total", nil, 1},
		{"flyfs_rpc_server_calls_total", l("role", "storaged"), 6},
		{"flyfs_rpc_server_calls_total", l("role", "metad"), 6},
		{"flyfs_rpc_client_calls_total", l("role", "client"), 6},
		{"flyfs_s3_requests_total", l("role", "gateway"), 3},
		{"flyfs_s3_request_duration_seconds", l("role", "gateway", "op", "Metrics"), 1},
		{"flyfs_s3_received_bytes_total", l("role", "gateway"), float64(len("some bytes"))},
	}
	if mnt != nil {
		moved = append(moved,
			movedBy{"flyfs_mount_written_bytes_total", l("role", "mount"), float64(len(data))},
			movedBy{"flyfs_mount_read_bytes_total", l("role", "mount"), float64(len(data))},
			movedBy{"flyfs_mount_op_duration_seconds", l("role", "mount", "op", "Write"), 1},
			movedBy{"flyfs_mount_op_duration_seconds", l("role", "mount", "op", "Create"), 1},
			movedBy{"flyfs_mount_op_duration_seconds", l("role", "mount", "op", "Lookup"), 1},
			movedBy{"flyfs_mount_op_errors_total", l("role", "mount", "op", "Rmdir", "errno", "ENOTEMPTY"), 1})
	}
	for _, c := range moved {
		if got := sum(after, c.name, c.labels) - sum(before, c.name, c.labels); got < c.atLeast {
			t.Errorf("%s%v moved by %v under the load, want at least %v", c.name, c.labels, got, c.atLeast)
		}
	}
}

// Families that exist but have no series until an event (a refusal, a
// multipart completion, a recovery running): the scrape cannot show them.
var seriesLess = map[string]bool{
	"flyfs_rpc_server_refused_total": true, "flyfs_s3_multipart_completions_total": true,
	"flyfs_storaged_recovery_remaining_bytes": true, "flyfs_storaged_recovery_remaining_chunks": true,
}

// checkDeployNames checks that the metrics the Grafana dashboard and the
// Prometheus rules under deploy/ name are families the roles export, and
// that the dashboard is a dashboard; noMount: the scrape had no mount, whose
// families are then taken on trust.
func checkDeployNames(t *testing.T, fams map[string]*dto.MetricFamily, noMount bool) {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/grafana/flyfs-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil || dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("deploy/grafana/flyfs-dashboard.json: %v (uid %q, %d panels)", err, dash.UID, len(dash.Panels))
	}
	exprs := map[string]string{}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs[tg.Expr] = "dashboard panel " + p.Title
		}
	}
	rules, err := os.ReadFile("../../deploy/flyfs-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(rules), "\n") {
		if e, ok := strings.CutPrefix(strings.TrimSpace(line), "expr:"); ok {
			exprs[e] = "rule"
		}
	}
	name := regexp.MustCompile(`\b(flyfs|go|process)_[a-z0-9_]+`)
	for e, where := range exprs {
		for _, n := range name.FindAllString(e, -1) {
			base := n
			for _, suf := range []string{"_bucket", "_count", "_sum"} {
				if b, ok := strings.CutSuffix(n, suf); ok && fams[b] != nil && fams[b].GetType() == dto.MetricType_HISTOGRAM {
					base = b
				}
			}
			if noMount && strings.HasPrefix(base, "flyfs_mount_") {
				continue
			}
			if fams[base] == nil && !seriesLess[base] {
				t.Errorf("%s names %s, which no role exports: %s", where, n, e)
			}
		}
	}
}
