package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the gateway's Prometheus series, per S3 operation.
type metrics struct {
	reg      *prometheus.Registry // nil when registered elsewhere
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	bytesIn  *prometheus.CounterVec
	bytesOut *prometheus.CounterVec
	// completions counts CompleteMultipartUpload by zero-copy or assembled.
	completions *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "flyfs", Subsystem: "s3", Name: "requests_total",
			Help: "S3 requests by operation and HTTP status."}, []string{"op", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "flyfs", Subsystem: "s3", Name: "request_seconds",
			Help: "S3 request latency by operation.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)}, []string{"op"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "flyfs", Subsystem: "s3", Name: "received_bytes_total",
			Help: "Request body bytes by operation."}, []string{"op"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "flyfs", Subsystem: "s3", Name: "sent_bytes_total",
			Help: "Response body bytes by operation."}, []string{"op"}),
		completions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "flyfs", Subsystem: "s3", Name: "multipart_completions_total",
			Help: "Completed multipart uploads, by whether completion moved no data (zero_copy=true) or assembled the parts."}, []string{"zero_copy"}),
	}
	if r == nil {
		m.reg = prometheus.NewRegistry()
		r = m.reg
	}
	m.requests = register(r, m.requests)
	m.latency = register(r, m.latency)
	m.bytesIn = register(r, m.bytesIn)
	m.bytesOut = register(r, m.bytesOut)
	m.completions = register(r, m.completions)
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
	if m.reg != nil {
		return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	}
	return promhttp.Handler()
}

// register adds c to r; when an equal collector is there already (a second
// gateway on one registry) the existing one is shared.
func register[T prometheus.Collector](r prometheus.Registerer, c T) T {
	if err := r.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			if ex, ok := are.ExistingCollector.(T); ok {
				return ex
			}
		}
	}
	return c
}
