package mgmtd

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/clusterid"
	"github.com/flyfs/flyfs/core/kv/kvmetrics"
	"github.com/flyfs/flyfs/core/observe"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/prometheus/client_golang/prometheus"
)

// Server is one cluster manager. Any number run against one KV store; the
// one holding the lease is primary and alone takes heartbeats, scans chains
// and changes routing; every one serves routing.
type Server struct {
	cfg      Config
	log      *slog.Logger
	instance uint64 // this process among mgmtd of the same ID
	rpc      *rpc.Server

	ctx    context.Context // ends at Close: stops the loops
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{} // asks the scan loop for a scan now

	// writeMu serialises the primary's writes and takeovers, so a write
	// never interleaves with a reload and writes rarely conflict.
	writeMu sync.Mutex

	expired expiredWatch // the lease rounds' watch of an expired lease; leaseLoop's only

	mu         sync.Mutex // guards the fields below (and the term's maps)
	term       *term      // set while this process holds the lease and has loaded the state
	leaseUntil time.Time  // monotonic end of this process's lease
	lease      leaseRecord
	leaseKnown bool

	cache atomic.Pointer[routing.Info] // newest routing seen; shared, read-only

	clusterID    string
	freshCluster bool // this process drew the cluster id

	metrics *metrics // nil without Config.Registerer

	closeOnce sync.Once
}

// New starts a cluster manager: it joins the election at once and serves
// RPCs on the listeners given to Serve. Close stops it.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Registerer != nil {
		cfg.KV = cfg.KV.WithHooks(kvmetrics.Hooks(observe.With(cfg.Registerer, prometheus.Labels{"id": cfg.ID}), "mgmtd"))
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With("mgmtd", cfg.ID), instance: rand.Uint64() | 1, kick: make(chan struct{}, 1)}
	if s.clusterID, s.freshCluster, err = clusterid.Ensure(context.Background(), cfg.KV); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.metrics = newMetrics(s, cfg.Registerer)
	s.rpc = rpc.NewServer(cfg.RPC)
	rpc.Handle(s.rpc, mgmtdapi.MethodHeartbeat, s.handleHeartbeat)
	rpc.Handle(s.rpc, mgmtdapi.MethodGetRouting, s.handleGetRouting)
	rpc.Handle(s.rpc, mgmtdapi.MethodGetPrimary, s.handleGetPrimary)
	rpc.Handle(s.rpc, mgmtdapi.MethodSetChains, s.handleSetChains)
	rpc.Handle(s.rpc, mgmtdapi.MethodSetTargetHeld, s.handleSetTargetHeld)
	rpc.Handle(s.rpc, mgmtdapi.MethodSetNodeHeld, s.handleSetNodeHeld)
	rpc.Handle(s.rpc, mgmtdapi.MethodAudit, s.handleAudit)
	rpc.Handle(s.rpc, mgmtdapi.MethodListAudit, s.handleListAudit)
	rpc.Handle(s.rpc, mgmtdapi.MethodListNodes, s.handleListNodes)
	rpc.Handle(s.rpc, mgmtdapi.MethodRegister, s.handleRegister)
	rpc.Handle(s.rpc, mgmtdapi.MethodListServices, s.handleListServices)
	s.wg.Add(2)
	go s.leaseLoop()
	go s.scanLoop()
	return s, nil
}

// Serve serves RPCs on l until Close; it returns rpc.ErrServerClosed then.
func (s *Server) Serve(l net.Listener) error { return s.rpc.Serve(l) }

// Close stops serving, gives up the lease if this mgmtd holds it (so a peer
// takes over without waiting for it to expire), and leaves the registry.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = s.releaseLease(ctx)
	})
	return err
}

// stop ends serving and the loops and drops the term, without touching the
// KV store: what a crash looks like to the peers.
func (s *Server) stop() {
	s.rpc.Close()
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	s.term = nil
	s.mu.Unlock()
	s.metrics.close()
}

// ID is the mgmtd's configured id.
func (s *Server) ID() string { return s.cfg.ID }

// ClusterID is the id of the cluster this mgmtd manages; fresh says this
// process drew it (a new cluster).
func (s *Server) ClusterID() (id string, fresh bool) { return s.clusterID, s.freshCluster }

// IsPrimary reports whether this mgmtd acts as primary now.
func (s *Server) IsPrimary() bool { return s.primaryTerm() != nil }

// Routing returns the newest routing from the KV store.
func (s *Server) Routing(ctx context.Context) (*routing.Info, error) { return s.loadRouting(ctx) }

// RoutingVersion returns the newest routing version (the cached one when the
// KV store cannot be read right now).
func (s *Server) RoutingVersion() uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if info, err := s.loadRouting(ctx); err == nil {
		return info.Version
	}
	if info := s.cache.Load(); info != nil {
		return info.Version
	}
	return 0
}
