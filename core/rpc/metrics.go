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
	servers  *serverGauges          // server only: connections and bytes held, read at scrape time

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
		m.servers = register(reg, newServerGauges())
	}
	return m
}

// serverGauges reports, at scrape time, what the servers registered on one
// registerer hold: open connections and request bytes in flight (their
// Stats, summed: several servers of one role in one process, such as the
// storage nodes of flyfs server, count together).
type serverGauges struct {
	conns, inflight *prometheus.Desc
	mu              sync.Mutex
	servers         map[*Server]struct{}
}

func newServerGauges() *serverGauges {
	return &serverGauges{
		conns: prometheus.NewDesc("flyfs_rpc_server_connections",
			"Connections the RPC server holds open now, those in their handshake included.", nil, nil),
		inflight: prometheus.NewDesc("flyfs_rpc_server_inflight_bytes",
			"Request bytes the RPC server holds now (being read, handled or answered): what MaxInflightBytes bounds.", nil, nil),
		servers: map[*Server]struct{}{},
	}
}

func (g *serverGauges) Describe(ch chan<- *prometheus.Desc) { ch <- g.conns; ch <- g.inflight }

func (g *serverGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	list := make([]*Server, 0, len(g.servers))
	for s := range g.servers {
		list = append(list, s)
	}
	g.mu.Unlock()
	var conns, bytes int64
	for _, s := range list {
		st := s.Stats()
		conns += int64(st.Conns)
		bytes += st.InflightBytes
	}
	ch <- prometheus.MustNewConstMetric(g.conns, prometheus.GaugeValue, float64(conns))
	ch <- prometheus.MustNewConstMetric(g.inflight, prometheus.GaugeValue, float64(bytes))
}

// track adds s to the gauges (until untrack).
func (m *metrics) track(s *Server) {
	if m == nil || m.servers == nil {
		return
	}
	m.servers.mu.Lock()
	m.servers.servers[s] = struct{}{}
	m.servers.mu.Unlock()
}

func (m *metrics) untrack(s *Server) {
	if m == nil || m.servers == nil {
		return
	}
	m.servers.mu.Lock()
	delete(m.servers.servers, s)
	m.servers.mu.Unlock()
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
