package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flyfs/flyfs/core/observe"
)

// metrics are the gateway's Prometheus series, per S3 operation. They are
// registered on the gateway's own registry, which /_flyfs/metrics serves
// (unless Config.Gatherer says otherwise), and on Config.Registerer when
// given: never on the global default registry.
type metrics struct {
	own      *prometheus.Registry // the gateway's families alone
	served   prometheus.Gatherer  // what /_flyfs/metrics serves
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	bytesIn  *prometheus.CounterVec
	bytesOut *prometheus.CounterVec
	// completions counts CompleteMultipartUpload by zero-copy or assembled.
	completions *prometheus.CounterVec
	// lifecycle counts what lifecycle rules removed: objects expired,
	// uploads aborted.
	lifecycle *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer, g prometheus.Gatherer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "flyfs", Subsystem: "s3", Name: "requests_total",
			Help: "S3 requests by operation and HTTP status."}, []string{"op", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "flyfs", Subsystem: "s3", Name: "request_duration_seconds",
			Help: "S3 request latency by operation.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)}, []string{"op"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "flyfs", Subsystem: "s3", Name: "received_bytes_total",
			Help: "Request body bytes by operation."}, []string{"op"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "flyfs", Subsystem: "s3", Name: "sent_bytes_total",
			Help: "Response body bytes by operation."}, []string{"op"}),
		completions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "flyfs", Subsystem: "s3", Name: "multipart_completions_total",
			Help: "Completed multipart uploads, by whether completion moved no data (zero_copy=true) or assembled the parts."}, []string{"zero_copy"}),
		lifecycle: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "flyfs", Subsystem: "s3", Name: "lifecycle_removals_total",
			Help: "What bucket lifecycle rules removed: objects expired (action=expired), noncurrent versions (action=noncurrent), expired delete markers (action=marker), multipart uploads aborted (action=aborted)."}, []string{"action"}),
	}
	if r != nil {
		// A second gateway on one registerer shares the first one's
		// collectors: the figures of both add up.
		m.requests = observe.Register(r, m.requests)
		m.latency = observe.Register(r, m.latency)
		m.bytesIn = observe.Register(r, m.bytesIn)
		m.bytesOut = observe.Register(r, m.bytesOut)
		m.completions = observe.Register(r, m.completions)
		m.lifecycle = observe.Register(r, m.lifecycle)
	}
	m.own = prometheus.NewRegistry()
	m.own.MustRegister(m.requests, m.latency, m.bytesIn, m.bytesOut, m.completions, m.lifecycle)
	m.served = g
	if m.served == nil {
		m.served = m.own
	}
	return m
}

func (m *metrics) observe(op string, status int, d time.Duration, in, out int64) {
	if status == 0 {
		status = http.StatusOK
	}
	m.requests.WithLabelValues(op, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(op).Observe(d.Seconds())
	if in > 0 {
		m.bytesIn.WithLabelValues(op).Add(float64(in))
	}
	if out > 0 {
		m.bytesOut.WithLabelValues(op).Add(float64(out))
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.served, promhttp.HandlerOpts{})
}
