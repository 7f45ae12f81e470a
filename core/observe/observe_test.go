package observe

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestNewLogger(t *testing.T) {
	var b bytes.Buffer
	l, err := NewLogger(&b, "warn", "json")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown", "k", 1)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("logged %q", b.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec["msg"] != "shown" || rec["level"] != "WARN" {
		t.Fatalf("%q: %v", lines[0], err)
	}
	for _, bad := range [][2]string{{"loud", "text"}, {"info", "xml"}} {
		if _, err := NewLogger(io.Discard, bad[0], bad[1]); err == nil {
			t.Errorf("NewLogger(%q, %q) took it", bad[0], bad[1])
		}
	}
}

func TestPprofAddr(t *testing.T) {
	for in, want := range map[string]string{":6060": "127.0.0.1:6060", "0.0.0.0:6060": "0.0.0.0:6060", "[::1]:1": "[::1]:1"} {
		if got := PprofAddr(in); got != want {
			t.Errorf("PprofAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestServeMetricsAndPprof(t *testing.T) {
	reg := NewRegistry()
	c := Register(Role(reg, "mgmtd"), prometheus.NewCounter(prometheus.CounterOpts{Name: "flyfs_mgmtd_test_total", Help: "h"}))
	c.Inc()
	if again := Register(Role(reg, "mgmtd"), prometheus.NewCounter(prometheus.CounterOpts{Name: "flyfs_mgmtd_test_total", Help: "h"})); again != c {
		t.Error("a second registration did not share the first collector")
	}
	m, err := ServeMetrics("127.0.0.1:0", reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	body := get(t, "http://"+m.Addr()+"/metrics")
	for _, want := range []string{`flyfs_mgmtd_test_total{role="mgmtd"} 1`, "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	p, err := ServePprof("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if body := get(t, "http://"+p.Addr()+"/debug/pprof/"); !strings.Contains(body, "goroutine") {
		t.Errorf("pprof index: %q", body)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return string(b)
}
