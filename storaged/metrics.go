package storaged

import (
	"strconv"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/observe"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the storage service's Prometheus families (docs/metrics.md):
// I/O per target counted where it happens, and the disks, targets and
// recoveries read at scrape time by collector. Every family carries
// node=<node id>, so the storage nodes of one process (flyfs server
// --disks N) report apart. A nil *metrics records nothing.
type metrics struct {
	cols *observe.Collectors

	ops, bytes   *prometheus.CounterVec   // op (read, write), origin, target
	duration     *prometheus.HistogramVec // op, origin, target
	ioErrors     *prometheus.CounterVec   // op, origin, target
	forwards     *prometheus.CounterVec   // target, result
	fwdRetries   *prometheus.CounterVec   // target
	recoverySent *prometheus.CounterVec   // target

	targets sync.Map // routing.TargetID → *targetMetrics
}

// targetMetrics are one target's series, resolved once.
type targetMetrics struct {
	readOps, readBytes, readErrors prometheus.Counter
	readDur                        prometheus.Observer
	write                          [3]originMetrics // by origin
	fwdOK, fwdErr, fwdRetries      prometheus.Counter
	recoverySent                   prometheus.Counter
}

type originMetrics struct {
	ops, bytes, errors prometheus.Counter
	dur                prometheus.Observer
}

// Where a write came from.
const (
	originClient   = iota // a client's update, at the head
	originChain           // forwarded by the predecessor
	originRecovery        // sent by the predecessor's recovery
)

var originNames = [3]string{"client", "chain", "recovery"}

func newMetrics(s *Server, reg prometheus.Registerer) *metrics {
	if reg == nil {
		return nil
	}
	reg = observe.With(reg, prometheus.Labels{"node": strconv.FormatUint(uint64(s.cfg.Node), 10)})
	cols := observe.NewCollectors(reg)
	ioLabels := []string{"op", "origin", "target"}
	m := &metrics{cols: cols,
		ops: observe.Add(cols, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "storaged", Name: "io_ops_total",
			Help: "Chunk reads and writes this node served, by op (read, write), origin (client; for writes also chain: forwarded by the predecessor, recovery: sent by its recovery) and target.",
		}, ioLabels)),
		bytes: observe.Add(cols, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "storaged", Name: "io_bytes_total",
			Help: "Bytes of the chunk reads and writes this node served, by op, origin and target.",
		}, ioLabels)),
		duration: observe.Add(cols, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "flyfs", Subsystem: "storaged", Name: "io_duration_seconds",
			Help:    "Duration of chunk reads (one range of a batch) and writes (at this hop, forwarding to the rest of the chain included), by op, origin and target.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 4, 10), // 25µs .. 6.5s
		}, ioLabels)),
		ioErrors: observe.Add(cols, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "storaged", Name: "io_errors_total",
			Help: "Chunk reads and writes that failed (stale chain version, not serving, missing chunk, disk error, ...), by op, origin and target.",
		}, ioLabels)),
		forwards: observe.Add(cols, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "storaged", Name: "forwards_total",
			Help: "Updates this node forwarded to a target's successor in its chain, by target and result (ok, error).",
		}, []string{"target", "result"})),
		fwdRetries: observe.Add(cols, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "storaged", Name: "forward_retries_total",
			Help: "Forwards sent again to a successor (it failed, or the chain changed under the update), by target.",
		}, []string{"target"})),
		recoverySent: observe.Add(cols, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "storaged", Name: "recovery_sent_bytes_total",
			Help: "Chunk bytes recoveries sent from a target to its syncing successor, by the sending target.",
		}, []string{"target"})),
	}
	observe.Add(cols, newCollector(s))
	return m
}

// target returns the series of target id.
func (m *metrics) target(id routing.TargetID) *targetMetrics {
	if v, ok := m.targets.Load(id); ok {
		return v.(*targetMetrics)
	}
	t := strconv.FormatUint(uint64(id), 10)
	tm := &targetMetrics{
		readOps:      m.ops.WithLabelValues("read", "client", t),
		readBytes:    m.bytes.WithLabelValues("read", "client", t),
		readErrors:   m.ioErrors.WithLabelValues("read", "client", t),
		readDur:      m.duration.WithLabelValues("read", "client", t),
		fwdOK:        m.forwards.WithLabelValues(t, "ok"),
		fwdErr:       m.forwards.WithLabelValues(t, "error"),
		fwdRetries:   m.fwdRetries.WithLabelValues(t),
		recoverySent: m.recoverySent.WithLabelValues(t),
	}
	for o, name := range originNames {
		tm.write[o] = originMetrics{ops: m.ops.WithLabelValues("write", name, t), bytes: m.bytes.WithLabelValues("write", name, t),
			errors: m.ioErrors.WithLabelValues("write", name, t), dur: m.duration.WithLabelValues("write", name, t)}
	}
	v, _ := m.targets.LoadOrStore(id, tm)
	return v.(*targetMetrics)
}

func (m *metrics) read(id routing.TargetID, n int, d time.Duration, err error) {
	if m == nil {
		return
	}
	tm := m.target(id)
	if err != nil {
		tm.readErrors.Inc()
		return
	}
	tm.readOps.Inc()
	tm.readBytes.Add(float64(n))
	tm.readDur.Observe(d.Seconds())
}

func (m *metrics) write(id routing.TargetID, origin int, n int, d time.Duration, err error) {
	if m == nil {
		return
	}
	om := &m.target(id).write[origin]
	if err != nil {
		om.errors.Inc()
		return
	}
	om.ops.Inc()
	om.bytes.Add(float64(n))
	om.dur.Observe(d.Seconds())
}

// forwarded counts one update forwarded in sent attempts (0: none, this
// target was the tail).
func (m *metrics) forwarded(id routing.TargetID, sent int, err error) {
	if m == nil || sent == 0 {
		return
	}
	tm := m.target(id)
	if err != nil {
		tm.fwdErr.Inc()
	} else {
		tm.fwdOK.Inc()
	}
	if sent > 1 {
		tm.fwdRetries.Add(float64(sent - 1))
	}
}

func (m *metrics) recovered(id routing.TargetID, bytes int) {
	if m != nil && bytes > 0 {
		m.target(id).recoverySent.Add(float64(bytes))
	}
}

func (m *metrics) close() {
	if m != nil {
		m.cols.Close()
	}
}

// collector reads the node's disks, targets and recoveries at scrape time.
type collector struct {
	s                                                 *Server
	capacity, free, used, allocated, chunks, checksum *prometheus.Desc
	diskState, targets, remainingBytes, remaining     *prometheus.Desc
	fenced                                            *prometheus.Desc
}

func newCollector(s *Server) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("flyfs_storaged_"+name, help, labels, nil)
	}
	return &collector{s: s,
		capacity:       d("disk_capacity_bytes", "Size of the file system under a disk directory less the blocks reserved for root (df's Used + Avail: 1 - free / capacity is df's Use%); fs names that file system (disks sharing one have the same fs: sum max by (fs) to count it once).", "disk", "fs"),
		free:           d("disk_free_bytes", "Bytes the file system under a disk directory can still give (available to unprivileged users); fs as for disk_capacity_bytes.", "disk", "fs"),
		used:           d("disk_used_bytes", "Content bytes of the chunks a disk holds.", "disk"),
		allocated:      d("disk_allocated_bytes", "Bytes of a disk's data files (preallocated blocks, used or free).", "disk"),
		chunks:         d("disk_chunks", "Chunks a disk holds.", "disk"),
		checksum:       d("checksum_failures_total", "Reads (and update reads) that found a chunk's data or record corrupt, by disk.", "disk"),
		diskState:      d("disk_state", "1 for a disk's engine state, 0 for the others: serving, full (out of space: writes fail until space returns), read_only (a write I/O error: until a restart).", "disk", "state"),
		targets:        d("targets", "This node's storage targets by local state (up-to-date, online, offline).", "local"),
		remainingBytes: d("recovery_remaining_bytes", "Bytes a running recovery still has to send from a target to its syncing successor.", "target"),
		remaining:      d("recovery_remaining_chunks", "Chunks a running recovery still has to bring over (send or remove), by sending target.", "target"),
		fenced:         d("fenced", "1 while this managed node serves nothing because it has not reached mgmtd for half the heartbeat timeout, else 0."),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.capacity, c.free, c.used, c.allocated, c.chunks, c.checksum, c.diskState,
		c.targets, c.remainingBytes, c.remaining, c.fenced} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for i, e := range s.engines {
		disk := s.cfg.Disks[i]
		st := e.Stats()
		if sp, ok := statDisk(disk); ok {
			gauge(c.capacity, float64(sp.capacity), disk, sp.fs)
			gauge(c.free, float64(sp.free), disk, sp.fs)
		}
		gauge(c.used, float64(st.UsedBytes), disk)
		gauge(c.allocated, float64(st.AllocatedBytes), disk)
		gauge(c.chunks, float64(st.Chunks), disk)
		ch <- prometheus.MustNewConstMetric(c.checksum, prometheus.CounterValue, float64(st.ChecksumErrors), disk)
		state := "serving"
		switch {
		case st.ReadOnly:
			state = "read_only"
		case st.Full:
			state = "full"
		}
		for _, name := range []string{"serving", "full", "read_only"} {
			gauge(c.diskState, b2f(name == state), disk, name)
		}
	}
	byLocal := map[routing.LocalState]int{}
	for _, t := range s.allTargets() {
		st := t.state.snapshot()
		byLocal[st.local]++
		if st.syncTarget != 0 {
			id := strconv.FormatUint(uint64(t.id), 10)
			gauge(c.remainingBytes, float64(st.syncBytesTotal-min(st.syncBytes, st.syncBytesTotal)), id)
			gauge(c.remaining, float64(st.syncTotal-min(st.syncDone, st.syncTotal)), id)
		}
	}
	for _, l := range []routing.LocalState{routing.UpToDate, routing.Online, routing.LocalOffline} {
		gauge(c.targets, float64(byLocal[l]), l.String())
	}
	gauge(c.fenced, b2f(s.fenced() != nil))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
