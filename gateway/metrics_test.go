package gateway

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/flyfs/flyfs/core/observe"
)

// family returns the gathered family name, or nil.
func family(t *testing.T, g prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

// The gateway registers its families on the registerer it is given (with
// that registerer's labels) and serves at /_flyfs/metrics its own families,
// or the gatherer it is given: never the global default registry.
func TestMetricsServeWhatTheyAreGiven(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(observe.Role(reg, "gateway"), nil)
	m.observe("PutObject", 200, time.Millisecond, 10, 0)
	m.completions.WithLabelValues("true").Inc()
	for _, name := range []string{"flyfs_s3_requests_total", "flyfs_s3_request_duration_seconds", "flyfs_s3_received_bytes_total", "flyfs_s3_multipart_completions_total"} {
		f := family(t, reg, name)
		if f == nil || len(f.Metric) == 0 {
			t.Fatalf("%s not on the given registry", name)
		}
		role := ""
		for _, l := range f.Metric[0].Label {
			if l.GetName() == "role" {
				role = l.GetValue()
			}
		}
		if role != "gateway" {
			t.Errorf("%s labels %v, want role=gateway", name, f.Metric[0].Label)
		}
	}
	serve := func(m *metrics) string {
		rec := httptest.NewRecorder()
		m.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/_flyfs/metrics", nil))
		return rec.Body.String()
	}
	body := serve(m)
	if !strings.Contains(body, `flyfs_s3_requests_total{op="PutObject",status="200"} 1`) || strings.Contains(body, "go_goroutines") {
		t.Errorf("/_flyfs/metrics serves other than the gateway's families:\n%s", body)
	}

	// A second gateway on the registerer shares the families: counts add up.
	m2 := newMetrics(observe.Role(reg, "gateway"), nil)
	m2.observe("PutObject", 200, time.Millisecond, 0, 0)
	if f := family(t, reg, "flyfs_s3_requests_total"); f.Metric[0].Counter.GetValue() != 2 {
		t.Errorf("two gateways on one registry: %v", f.Metric[0])
	}

	// Given a gatherer, that is what is served.
	whole := observe.NewRegistry()
	m3 := newMetrics(observe.Role(whole, "gateway"), whole)
	m3.observe("GetObject", 404, time.Millisecond, 0, 0)
	if body := serve(m3); !strings.Contains(body, `flyfs_s3_requests_total{op="GetObject",role="gateway",status="404"} 1`) || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/_flyfs/metrics does not serve the given gatherer:\n%s", body)
	}
	// Without a registerer: the gateway's own registry alone.
	m4 := newMetrics(nil, nil)
	m4.observe("HeadObject", 200, time.Millisecond, 0, 0)
	if body := serve(m4); !strings.Contains(body, `flyfs_s3_requests_total{op="HeadObject",status="200"} 1`) {
		t.Errorf("own registry:\n%s", body)
	}
}
