package client

import (
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/observe"
	"github.com/prometheus/client_golang/prometheus"
)

// fsMetrics are the client's Prometheus families (docs/metrics.md): file
// data calls' latency and bytes, counted where they happen, and the data
// path's window, hedges and retries read at scrape time. Every client of a
// process registered on one registerer counts into the same families (a
// mount and its native API, a gateway's client). A nil *fsMetrics records
// nothing.
type fsMetrics struct {
	readBytes, writtenBytes prometheus.Counter
	duration                *prometheus.HistogramVec
	errors                  *prometheus.CounterVec
	read, write, readv      prometheus.Observer
	io                      *ioCollector
	cache                   *cacheCollector
	chunks                  *ChunkIO
}

func newFSMetrics(reg prometheus.Registerer, fs *FS, chunks *ChunkIO) *fsMetrics {
	if reg == nil {
		return nil
	}
	m := &fsMetrics{
		readBytes: observe.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "client", Name: "read_bytes_total",
			Help: "File bytes read through the client (ReadAt, ReadV).",
		})),
		writtenBytes: observe.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "client", Name: "written_bytes_total",
			Help: "File bytes written through the client (WriteAt).",
		})),
		duration: observe.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "flyfs", Subsystem: "client", Name: "op_duration_seconds",
			Help:    "Duration of the client's file data calls, by op (read, readv, write), retries through failovers included; metadata calls are timed per RPC method by flyfs_rpc_client_call_duration_seconds.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 4, 10), // 50µs .. 13s
		}, []string{"op"})),
		errors: observe.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "client", Name: "op_errors_total",
			Help: "File data calls of the client that failed, by op (read, readv, write).",
		}, []string{"op"})),
		io:     observe.Register(reg, newIOCollector()),
		cache:  observe.Register(reg, &cacheCollector{fs: fs}),
		chunks: chunks,
	}
	m.read, m.write, m.readv = m.duration.WithLabelValues("read"), m.duration.WithLabelValues("write"), m.duration.WithLabelValues("readv")
	for _, op := range []string{"read", "readv", "write"} {
		m.errors.WithLabelValues(op)
	}
	m.io.add(chunks)
	return m
}

// done records one data call: its op's timer, its bytes and its error.
func (m *fsMetrics) done(op prometheus.Observer, name string, start time.Time, bytes prometheus.Counter, n int, err error) {
	op.Observe(time.Since(start).Seconds())
	if n > 0 {
		bytes.Add(float64(n))
	}
	if err != nil {
		m.errors.WithLabelValues(name).Inc()
	}
}

func (m *fsMetrics) close() {
	if m != nil {
		m.io.remove(m.chunks)
	}
}

// ioCollector reports the data path of every ChunkIO added to it, summed:
// window slots and requests in flight now, and the hedges, their wins and
// the retries so far (a ChunkIO removed keeps counting in the totals, so
// the counters never go back).
type ioCollector struct {
	slots, inflight, hedges, wins, retries, relayed, silent *prometheus.Desc

	mu      sync.Mutex
	live    map[*ChunkIO]struct{}
	retired IOStats // counters of the ChunkIOs removed
}

func newIOCollector() *ioCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("flyfs_client_"+name, help, nil, nil)
	}
	return &ioCollector{
		slots:    d("window_slots", "Chunk requests the in-flight window lets out at once now (it adapts to congestion)."),
		inflight: d("inflight_requests", "Chunk requests out now, holding window slots."),
		hedges:   d("hedges_total", "Hedged reads sent: a second replica asked when the first was slow."),
		wins:     d("hedge_wins_total", "Hedged reads the second replica answered first."),
		retries:  d("retries_total", "Chunk request attempts repeated after a retryable error (failover, chain change, busy)."),
		relayed:  d("relayed_writes_total", "Chunk updates sent through another replica of the chain, the head not answering this client."),
		silent:   d("unanswered_writes_total", "Chunk update attempts ended early because the head answered neither them nor a probe (then retried, through a relay)."),
		live:     map[*ChunkIO]struct{}{},
	}
}

func (c *ioCollector) add(cio *ChunkIO) {
	c.mu.Lock()
	c.live[cio] = struct{}{}
	c.mu.Unlock()
}

func (c *ioCollector) remove(cio *ChunkIO) {
	st := cio.Stats()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.live[cio]; !ok {
		return
	}
	delete(c.live, cio)
	c.retired.Hedges += st.Hedges
	c.retired.HedgeWins += st.HedgeWins
	c.retired.Retries += st.Retries
	c.retired.Relayed += st.Relayed
	c.retired.Unanswered += st.Unanswered
}

func (c *ioCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.slots, c.inflight, c.hedges, c.wins, c.retries, c.relayed, c.silent} {
		ch <- d
	}
}

func (c *ioCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	sum := c.retired
	var slots, inflight int
	for cio := range c.live {
		st := cio.Stats()
		slots += st.Window.Limit
		inflight += st.Window.InFlight
		sum.Hedges += st.Hedges
		sum.HedgeWins += st.HedgeWins
		sum.Retries += st.Retries
		sum.Relayed += st.Relayed
		sum.Unanswered += st.Unanswered
	}
	c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(c.slots, prometheus.GaugeValue, float64(slots))
	ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(inflight))
	ch <- prometheus.MustNewConstMetric(c.hedges, prometheus.CounterValue, float64(sum.Hedges))
	ch <- prometheus.MustNewConstMetric(c.wins, prometheus.CounterValue, float64(sum.HedgeWins))
	ch <- prometheus.MustNewConstMetric(c.retries, prometheus.CounterValue, float64(sum.Retries))
	ch <- prometheus.MustNewConstMetric(c.relayed, prometheus.CounterValue, float64(sum.Relayed))
	ch <- prometheus.MustNewConstMetric(c.silent, prometheus.CounterValue, float64(sum.Unanswered))
}

// cacheCollector reports each cache tier's counters (all zero without it).
type cacheCollector struct{ fs *FS }

var (
	tierLabel      = []string{"tier"}
	cacheHits      = prometheus.NewDesc("flyfs_client_cache_hits_total", "Blocks of file data a cache tier served.", tierLabel, nil)
	cacheMisses    = prometheus.NewDesc("flyfs_client_cache_misses_total", "Blocks of file data looked for in a cache tier and not found there.", tierLabel, nil)
	cacheEvictions = prometheus.NewDesc("flyfs_client_cache_evictions_total", "Blocks (memory) or 4 MiB regions (disk) a cache tier let go to stay within its size.", tierLabel, nil)
	cacheCorrupt   = prometheus.NewDesc("flyfs_client_cache_corrupt_total", "Cached blocks that failed their checksum, dropped and fetched again.", tierLabel, nil)
	cacheUsed      = prometheus.NewDesc("flyfs_client_cache_bytes", "Bytes of file data a cache tier holds.", tierLabel, nil)
	cacheCapacity  = prometheus.NewDesc("flyfs_client_cache_capacity_bytes", "Size of a cache tier (--cache-mem, --cache-size; 0: none).", tierLabel, nil)
	cacheSkipped   = prometheus.NewDesc("flyfs_client_cache_disk_skipped_total", "Fetched blocks not written to the disk tier because its writer was behind.", nil, nil)
	cacheFailed    = prometheus.NewDesc("flyfs_client_cache_disk_failed_total", "Writes to the disk tier the local disk failed.", nil, nil)
)

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cacheHits, cacheMisses, cacheEvictions, cacheCorrupt, cacheUsed, cacheCapacity, cacheSkipped, cacheFailed} {
		ch <- d
	}
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.fs.CacheStats()
	for _, t := range []struct {
		name string
		s    TierStats
	}{{"memory", s.Memory}, {"disk", s.Disk}} {
		ch <- prometheus.MustNewConstMetric(cacheHits, prometheus.CounterValue, float64(t.s.Hits), t.name)
		ch <- prometheus.MustNewConstMetric(cacheMisses, prometheus.CounterValue, float64(t.s.Misses), t.name)
		ch <- prometheus.MustNewConstMetric(cacheEvictions, prometheus.CounterValue, float64(t.s.Evictions), t.name)
		ch <- prometheus.MustNewConstMetric(cacheCorrupt, prometheus.CounterValue, float64(t.s.Corrupt), t.name)
		ch <- prometheus.MustNewConstMetric(cacheUsed, prometheus.GaugeValue, float64(t.s.Used), t.name)
		ch <- prometheus.MustNewConstMetric(cacheCapacity, prometheus.GaugeValue, float64(t.s.Capacity), t.name)
	}
	ch <- prometheus.MustNewConstMetric(cacheSkipped, prometheus.CounterValue, float64(s.Disk.Skipped))
	ch <- prometheus.MustNewConstMetric(cacheFailed, prometheus.CounterValue, float64(s.Disk.Failed))
}
