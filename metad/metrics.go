package metad

import (
	"context"
	"strings"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/observe"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/metad/ns"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// metrics are the metadata service's Prometheus families (docs/metrics.md):
// every operation's latency and errors by errno, GC progress, and, read at
// scrape time, the GC queue and the open write sessions. Every family
// carries id=<metad id>. A nil *metrics records nothing.
type metrics struct {
	cols     *observe.Collectors
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	gcFiles  prometheus.Counter
	gcBytes  prometheus.Counter
	reaped   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, n *ns.Namespace) *metrics {
	if reg == nil {
		return nil
	}
	cols := observe.NewCollectors(reg)
	m := &metrics{
		cols: cols,
		duration: observe.Add(cols, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "flyfs", Subsystem: "metad", Name: "op_duration_seconds",
			Help:    "Duration of metadata operations served, by operation (its _count is the operations served).",
			Buckets: prometheus.ExponentialBuckets(50e-6, 4, 10), // 50µs .. 13s
		}, []string{"op"})),
		errors: observe.Add(cols, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "metad", Name: "op_errors_total",
			Help: "Metadata operations that failed, by operation and errno (ENOENT, EEXIST, ...; an RPC code such as Unavailable for a failure that is not an errno).",
		}, []string{"op", "errno"})),
		gcFiles: observe.Add(cols, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "metad", Name: "gc_files_total",
			Help: "Removed files whose chunks this metad's GC deleted.",
		})),
		gcBytes: observe.Add(cols, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "metad", Name: "gc_freed_bytes_total",
			Help: "Length of the removed files whose chunks this metad's GC deleted.",
		})),
		reaped: observe.Add(cols, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "metad", Name: "sessions_reaped_total",
			Help: "Write sessions this metad closed because their client went away.",
		})),
	}
	observe.Add(cols, &stateCollector{ns: n,
		queue: prometheus.NewDesc("flyfs_metad_gc_queue_entries",
			"Entries in the GC queue (removed files and directories whose chunks or entries are still to reclaim), due or not; the whole cluster's, so every metad reports the same.", nil, nil),
		sessions: prometheus.NewDesc("flyfs_metad_write_sessions",
			"Open write sessions (files open for writing), the whole cluster's, so every metad reports the same.", nil, nil),
	})
	return m
}

// handle registers fn for method on s's RPC server, timing it and counting
// its errors when metrics are on.
func handle[Req, Resp any](s *Server, method rpc.Method, fn rpc.HandlerFunc[Req, Resp], opts ...rpc.HandleOption) {
	opts = append(opts, rpc.DeepStack()) // every call is a KV transaction
	m := s.metrics
	if m == nil {
		rpc.Handle(s.rpc, method, fn, opts...)
		return
	}
	op := strings.TrimPrefix(method.String(), "metad.")
	timer := m.duration.WithLabelValues(op)
	rpc.Handle(s.rpc, method, func(ctx context.Context, req *Req, payload []byte) (*Resp, []byte, error) {
		start := time.Now()
		resp, out, err := fn(ctx, req, payload)
		timer.Observe(time.Since(start).Seconds())
		if err != nil {
			m.errors.WithLabelValues(op, errnoLabel(err)).Inc()
		}
		return resp, out, err
	}, opts...)
}

// errnoLabel names a handler's error: its errno (ENOENT), or its RPC code.
func errnoLabel(err error) string {
	if e := metaapi.Errno(err); e != 0 {
		if name := unix.ErrnoName(e); name != "" {
			return name
		}
		return "errno" + strings.TrimPrefix(e.Error(), "errno ")
	}
	return rpc.CodeOf(err).String()
}

func (m *metrics) collected(c collected) {
	if m != nil {
		m.gcFiles.Add(float64(c.Files))
		m.gcBytes.Add(float64(c.Bytes))
	}
}

func (m *metrics) sessionsReaped(n int) {
	if m != nil {
		m.reaped.Add(float64(n))
	}
}

func (m *metrics) close() {
	if m != nil {
		m.cols.Close()
	}
}

// stateCollector reads the GC queue length and the open write sessions from
// the store at scrape time, each read bounded by a short timeout; a read that
// fails leaves its gauge out of that scrape.
type stateCollector struct {
	ns              *ns.Namespace
	queue, sessions *prometheus.Desc
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.queue; ch <- c.sessions }

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if q, err := c.ns.GCQueueLength(ctx); err == nil {
		ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(q))
	}
	// Every session, listed as "dead" to a liveness test that says no.
	if sess, err := c.ns.DeadSessions(ctx, func(ns.ClientID) bool { return false }); err == nil {
		ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.GaugeValue, float64(len(sess)))
	}
}
