package rpc

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics counts calls by method and code and times them by method. The
// label lookups are cached per (method, code), so recording a call costs two
// sync.Map loads and two atomic updates. A nil *metrics records nothing.
type metrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	refused  *prometheus.CounterVec // server only: refusals by limit

	counters sync.Map // uint64(method)<<32 | code → prometheus.Counter
	timers   sync.Map // Method → prometheus.Observer
}

// newMetrics registers (or reuses, when another server or client of the
// process registered them first) the collectors for side "server" or
// "client".
func newMetrics(reg prometheus.Registerer, side string) *metrics {
	if reg == nil {
		return nil
	}
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "flyfs", Subsystem: "rpc", Name: side + "_calls_total",
		Help: "RPC calls completed by the " + side + ", by method and result code.",
	}, []string{"method", "code"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "flyfs", Subsystem: "rpc", Name: side + "_call_duration_seconds",
		Help:    "Duration of RPC calls seen by the " + side + ", by method.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 4, 10), // 50µs .. 13s
	}, []string{"method"})
	m := &metrics{
		calls:    register(reg, calls),
		duration: register(reg, duration),
	}
	if side == "server" {
		m.refused = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "rpc", Name: "server_refused_total",
			Help: "Connections and requests the server refused for its resource limits, by limit " +
				"(max_conns, inflight_bytes, frame_deadline).",
		}, []string{"limit"}))
	}
	return m
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		// A conflicting collector of another shape: keep ours unregistered
		// rather than fail the server; the metric is simply not exported.
	}
	return c
}

func (m *metrics) observe(method Method, code Code, d time.Duration) {
	if m == nil {
		return
	}
	key := uint64(method)<<32 | uint64(code)
	c, ok := m.counters.Load(key)
	if !ok {
		c, _ = m.counters.LoadOrStore(key, m.calls.WithLabelValues(method.String(), code.String()))
	}
	c.(prometheus.Counter).Inc()
	t, ok := m.timers.Load(method)
	if !ok {
		t, _ = m.timers.LoadOrStore(method, m.duration.WithLabelValues(method.String()))
	}
	t.(prometheus.Observer).Observe(d.Seconds())
}

// refuse counts a refusal for limit.
func (m *metrics) refuse(limit string) {
	if m == nil || m.refused == nil {
		return
	}
	m.refused.WithLabelValues(limit).Inc()
}
