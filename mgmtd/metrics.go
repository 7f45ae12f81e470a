package mgmtd

import (
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/observe"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the cluster manager's Prometheus families (docs/metrics.md):
// event counters updated where the events happen, and the state gauges
// (primary, routing version, chains, targets, nodes) read at scrape time by
// collector. Every family carries id=<mgmtd id>, so several mgmtd of one
// process (the in-process cluster) report apart. A nil *metrics records
// nothing.
type metrics struct {
	cols           *observe.Collectors
	leaseChanges   *prometheus.CounterVec
	heartbeats     prometheus.Counter
	heartbeatsLate prometheus.Counter
	nodeFailures   prometheus.Counter
	chainUpdates   prometheus.Counter
}

func newMetrics(s *Server, reg prometheus.Registerer) *metrics {
	if reg == nil {
		return nil
	}
	reg = observe.With(reg, prometheus.Labels{"id": s.cfg.ID})
	cols := observe.NewCollectors(reg)
	m := &metrics{
		cols: cols,
		leaseChanges: observe.Add(cols, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "mgmtd", Name: "lease_changes_total",
			Help: "Changes of this mgmtd's primary lease: acquired (it became primary) or lost (it stopped being primary).",
		}, []string{"event"})),
		heartbeats: observe.Add(cols, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "mgmtd", Name: "heartbeats_total",
			Help: "Storage node heartbeats this mgmtd accepted as primary.",
		})),
		heartbeatsLate: observe.Add(cols, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "mgmtd", Name: "heartbeats_late_total",
			Help: "Accepted heartbeats that came more than a third of the heartbeat timeout after the node's previous one (nodes send every sixth).",
		})),
		nodeFailures: observe.Add(cols, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "mgmtd", Name: "node_failures_total",
			Help: "Storage nodes this mgmtd declared failed (silent for the heartbeat timeout).",
		})),
		chainUpdates: observe.Add(cols, prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "flyfs", Subsystem: "mgmtd", Name: "chain_updates_total",
			Help: "Chain changes (target states, order, reported local states) the chain scan wrote.",
		})),
	}
	for _, e := range []string{"acquired", "lost"} {
		m.leaseChanges.WithLabelValues(e) // exported from the start, at 0
	}
	observe.Add(cols, newCollector(s))
	return m
}

func (m *metrics) leaseChange(event string) {
	if m != nil {
		m.leaseChanges.WithLabelValues(event).Inc()
	}
}

// heartbeat counts an accepted heartbeat that came gap after the node's
// previous one (0: the first this term).
func (m *metrics) heartbeat(gap, timeout time.Duration) {
	if m == nil {
		return
	}
	m.heartbeats.Inc()
	if gap > timeout/3 {
		m.heartbeatsLate.Inc()
	}
}

func (m *metrics) nodeFailed() {
	if m != nil {
		m.nodeFailures.Inc()
	}
}

func (m *metrics) chainUpdated(n int) {
	if m != nil {
		m.chainUpdates.Add(float64(n))
	}
}

func (m *metrics) close() {
	if m != nil {
		m.cols.Close()
	}
}

// Chain states for flyfs_mgmtd_chains, worst first: a chain is unavailable
// with no serving target, recovering while a target syncs, degraded while a
// target is out (waiting, offline, lastsrv), healthy when every target serves.
var chainStates = []string{"unavailable", "recovering", "degraded", "healthy"}

func chainState(c *routing.Chain) string {
	serving, syncing := 0, 0
	for _, t := range c.Targets {
		switch t.Public {
		case routing.Serving:
			serving++
		case routing.Syncing:
			syncing++
		}
	}
	switch {
	case serving == 0:
		return "unavailable"
	case syncing > 0:
		return "recovering"
	case serving < len(c.Targets):
		return "degraded"
	}
	return "healthy"
}

var (
	publicStates = []routing.PublicState{routing.Serving, routing.Syncing, routing.Waiting, routing.LastSrv, routing.Offline}
	localStates  = []routing.LocalState{routing.UpToDate, routing.Online, routing.LocalOffline}
)

// collector reads the mgmtd's state at scrape time. The cluster's figures
// (chains, targets, nodes, services) come from the primary only, which holds
// them live; the others report primary 0 and their routing version.
type collector struct {
	s                                     *Server
	primary, term, version, bootstrapping *prometheus.Desc
	chains, targets, nodes, services      *prometheus.Desc
}

func newCollector(s *Server) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("flyfs_mgmtd_"+name, help, labels, nil)
	}
	return &collector{s: s,
		primary:       d("primary", "1 while this mgmtd acts as primary (holds the lease with time to spare), else 0."),
		term:          d("lease_term", "Term of the primary lease as this mgmtd last saw it; it grows with every change of primary."),
		version:       d("routing_version", "Newest routing version this mgmtd has seen; every routing change bumps it."),
		bootstrapping: d("bootstrapping", "1 while the primary is in its bootstrapping window (declares no node failed yet), else 0."),
		chains:        d("chains", "Chains by state (primary only): healthy, degraded (a target out), recovering (a target syncing), unavailable (no serving target).", "state"),
		targets:       d("targets", "Storage targets by public state (as published) and local state (as their nodes report it; primary only).", "public", "local"),
		nodes:         d("nodes", "Storage nodes known to the primary, by state: alive or failed (silent for the heartbeat timeout).", "state"),
		services:      d("services", "Services registered alive with the primary, by kind (metad, gateway, client).", "kind"),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.primary, c.term, c.version, c.bootstrapping, c.chains, c.targets, c.nodes, c.services} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	t := s.primaryTerm()
	gauge(c.primary, b2f(t != nil))
	s.mu.Lock()
	term := s.lease.Term
	s.mu.Unlock()
	gauge(c.term, float64(term))
	info := s.cache.Load()
	if info != nil {
		gauge(c.version, float64(info.Version))
	}
	if t == nil || info == nil {
		return
	}
	now := time.Now()
	chains := map[string]int{}
	type tk struct {
		p routing.PublicState
		l routing.LocalState
	}
	targets := map[tk]int{}
	nodes := map[string]int{}
	services := map[string]int{}
	s.mu.Lock()
	if s.term != t { // lost meanwhile: report as a non-primary
		s.mu.Unlock()
		return
	}
	gauge(c.bootstrapping, b2f(t.bootstrapping(now)))
	local := t.localFunc(now, s.cfg.HeartbeatTimeout)
	for _, ch := range info.Chains {
		chains[chainState(ch)]++
		for _, tg := range ch.Targets {
			targets[tk{tg.Public, local(tg.ID)}]++
		}
	}
	for _, n := range t.nodes {
		if t.alive(n, now, s.cfg.HeartbeatTimeout) {
			nodes["alive"]++
		} else {
			nodes["failed"]++
		}
	}
	ttl := s.serviceTTL()
	for k, sv := range t.services {
		if now.Sub(sv.last) <= ttl {
			services[k[0]]++
		}
	}
	s.mu.Unlock()
	for _, st := range chainStates {
		gauge(c.chains, float64(chains[st]), st)
	}
	for _, p := range publicStates {
		for _, l := range localStates {
			gauge(c.targets, float64(targets[tk{p, l}]), p.String(), l.String())
		}
	}
	for _, st := range []string{"alive", "failed"} {
		gauge(c.nodes, float64(nodes[st]), st)
	}
	for _, k := range []string{mgmtdapi.KindMetad, mgmtdapi.KindGateway, mgmtdapi.KindConsole, mgmtdapi.KindClient} {
		gauge(c.services, float64(services[k]), k)
		delete(services, k)
	}
	for k, n := range services {
		gauge(c.services, float64(n), k)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
