package storaged

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/storaged/engine"
	"github.com/prometheus/client_golang/prometheus"
)

// TargetConfig places one storage target: the chain it belongs to for good,
// and the disk (index into Config.Disks) that holds its chunks.
type TargetConfig struct {
	ID    routing.TargetID `json:"id"`
	Chain routing.ChainID  `json:"chain"`
	Disk  int              `json:"disk"`
}

// Config configures a storage service.
type Config struct {
	Node    routing.NodeID
	Disks   []string // one chunk engine per directory
	Targets []TargetConfig
	Routing routing.Source
	// RPC configures the server and the client that forwards to successors
	// (token, logger, limits, a Dial hook for tests).
	RPC rpc.Options
	// NoSync acknowledges updates before data and metadata reach the disk.
	NoSync bool
	// SyncWindow bounds how long a relaxed update (a mount's) stays not
	// durable: every disk syncs this often while one waits; fsync(2) on the
	// mount syncs at once (MethodSync). 0: every update is durable when
	// acknowledged.
	SyncWindow time.Duration
	// InlineMax: chunks of at most this many bytes keep their content in the
	// disk's metadata store (engine.Options.InlineMax; 0: the default of
	// 16 KiB; negative: none).
	InlineMax int
	// EncryptionKey (32 bytes) keeps chunk content encrypted on the disks
	// (engine.Options.EncryptionKey): decided when a disk is created, and
	// reported to mgmtd with each disk (DiskReport.Encrypted).
	EncryptionKey []byte
	// SegmentSize is the checksum granularity of disks created here
	// (engine.Options.SegmentSize; 0: the engine's default).
	SegmentSize int
	// DiskFaults, when set, fails the disks' data-file I/O on demand
	// (engine.Faults): fault drills and tests.
	DiskFaults *engine.Faults
	// ForwardTimeout bounds how long an update keeps retrying towards its
	// successor (through routing changes) before failing. Default 30 s.
	ForwardTimeout time.Duration
	Logger         *slog.Logger

	// Mgmtd, when set, makes this a managed node: it heartbeats its targets'
	// local states, learns its targets from routing (Targets may be empty),
	// recovers syncing successors, and fences itself. Without it, Targets are
	// fixed and always up to date (routing set by hand).
	Mgmtd Mgmtd
	// Addr is the address other services reach this node at (heartbeats).
	Addr string
	// HeartbeatTimeout is T: mgmtd declares a node failed after T of silence,
	// and a node that cannot reach mgmtd for T/2 stops serving. Default 6 s.
	HeartbeatTimeout time.Duration
	// ClusterID, when set, is the cluster mgmtd runs: a disk stamped with
	// another cluster is refused, an unstamped one is stamped with it.
	ClusterID string
	// ResyncBytesPerSec throttles recovery transfers; 0 means 256 MiB/s.
	ResyncBytesPerSec int64

	// RepairWorkers bounds the repairs of corrupt chunk replicas running at
	// once (each fetches a whole chunk from another replica); 0 means 2.
	RepairWorkers int
	// ScrubInterval, when positive, turns on the background scrub: a pass
	// over every chunk of this node's targets, verifying its content and
	// scheduling repairs, starts this long after the previous one started
	// (or finished, if it took longer). Off by default.
	ScrubInterval time.Duration
	// ScrubBytesPerSec throttles the scrub's reads; 0 means 16 MiB/s.
	ScrubBytesPerSec int64

	// Registerer, when set, receives the storage service's metrics
	// (flyfs_storaged_*; docs/metrics.md), labelled node=<Node>. The RPC
	// server's metrics go to RPC.Registerer.
	Registerer prometheus.Registerer
}

// Server is a storage service: its targets' chunks on its disks, and CRAQ
// replication along their chains.
type Server struct {
	cfg     Config
	log     *slog.Logger
	engines []*engine.Engine
	rpc     *rpc.Server
	peers   storageapi.Client
	locks   *chunkLocks
	dedup   *dedup

	tmu     sync.RWMutex
	targets map[routing.ChainID]*target

	life      lifecycle      // managed mode: heartbeats, fencing, recovery
	repair    repairer       // rewrites corrupt chunk replicas from good ones
	bgWG      sync.WaitGroup // the scrub
	redriving sync.Map       // engine.Key -> struct{}: pending chunks being re-driven
	stopBg    context.CancelFunc
	bg        context.Context // cancelled at Close: bounds work that outlives a request
	io        ioCounters
	started   uint64 // start time in ns: tells the console the counters started over
	closed    atomic.Bool
	closeOnce sync.Once
	metrics   *metrics // nil without Config.Registerer
}

type target struct {
	id    routing.TargetID
	chain routing.ChainID
	disk  int
	eng   *engine.Engine
	state targetState
}

// New opens the disks' engines and registers the RPC handlers.
func New(cfg Config) (*Server, error) {
	if cfg.Routing == nil {
		return nil, errors.New("storaged: no routing source")
	}
	if len(cfg.Disks) == 0 {
		return nil, errors.New("storaged: no disk directories")
	}
	if cfg.ForwardTimeout <= 0 {
		cfg.ForwardTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger.With("node", cfg.Node),
		targets: map[routing.ChainID]*target{},
		locks:   newChunkLocks(), dedup: newDedup(10 * time.Minute),
	}
	for _, dir := range cfg.Disks {
		if cfg.ClusterID != "" {
			if err := checkDiskCluster(dir, cfg.ClusterID); err != nil {
				s.closeEngines()
				return nil, fmt.Errorf("storaged: %w", err)
			}
		}
		e, err := engine.Open(dir, engine.Options{Sync: !cfg.NoSync, SyncWindow: cfg.SyncWindow, InlineMax: cfg.InlineMax,
			Logger: s.log, EncryptionKey: cfg.EncryptionKey, SegmentSize: cfg.SegmentSize, Faults: cfg.DiskFaults})
		if err != nil {
			s.closeEngines()
			return nil, fmt.Errorf("storaged: open disk %s: %w", dir, err)
		}
		s.engines = append(s.engines, e)
	}
	for _, tc := range cfg.Targets {
		if tc.Disk < 0 || tc.Disk >= len(s.engines) {
			s.closeEngines()
			return nil, fmt.Errorf("storaged: target %d names disk %d of %d", tc.ID, tc.Disk, len(s.engines))
		}
		if _, dup := s.targets[tc.Chain]; dup {
			s.closeEngines()
			return nil, fmt.Errorf("storaged: two targets of chain %d on one node", tc.Chain)
		}
		t := &target{id: tc.ID, chain: tc.Chain, disk: tc.Disk, eng: s.engines[tc.Disk]}
		if cfg.Mgmtd == nil {
			t.state.local, t.state.joined = routing.UpToDate, true
		}
		s.targets[tc.Chain] = t
	}
	if cfg.HeartbeatTimeout <= 0 {
		s.cfg.HeartbeatTimeout = 6 * time.Second
	}
	s.metrics = newMetrics(s, cfg.Registerer)
	s.peers = storageapi.Client{RPC: rpc.NewClient(cfg.RPC)}
	s.rpc = rpc.NewServer(cfg.RPC)
	// Borrowing is safe: the engine copies the data, and forwarding ends before
	// the handler returns.
	rpc.Handle(s.rpc, storageapi.MethodWrite, s.handleWrite, rpc.BorrowPayload())
	rpc.Handle(s.rpc, storageapi.MethodBatchRead, s.handleBatchRead, rpc.PooledResponse())
	rpc.Handle(s.rpc, storageapi.MethodRemoveChunks, s.handleRemoveChunks)
	rpc.Handle(s.rpc, storageapi.MethodQueryLastChunk, s.handleQueryLastChunk)
	rpc.Handle(s.rpc, storageapi.MethodDumpChunkMeta, s.handleDumpChunkMeta)
	rpc.Handle(s.rpc, storageapi.MethodStats, s.handleStats)
	rpc.Handle(s.rpc, storageapi.MethodSyncDone, s.handleSyncDone)
	rpc.Handle(s.rpc, storageapi.MethodSync, s.handleSync)
	bg, stop := context.WithCancel(context.Background())
	s.bg, s.stopBg = bg, stop
	s.started = uint64(time.Now().UnixNano())
	s.startRepairs(bg)
	if cfg.Mgmtd != nil {
		s.startLifecycle()
	}
	go s.watchHeads(bg)
	if cfg.ScrubInterval > 0 {
		s.bgWG.Add(1)
		go func() {
			defer s.bgWG.Done()
			s.scrub(bg)
		}()
	}
	return s, nil
}

// Serve serves RPCs on l until Close.
func (s *Server) Serve(l net.Listener) error { return s.rpc.Serve(l) }

// Close stops serving at once (open connections are cut) and closes the disks.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.stopBg()
		s.stopLifecycle()
		s.rpc.Close()
		s.peers.RPC.Close()
		s.repair.wg.Wait()
		s.bgWG.Wait()
		s.metrics.close()
		err = s.closeEngines()
	})
	return err
}

func (s *Server) closeEngines() error {
	var errs []error
	for _, e := range s.engines {
		errs = append(errs, e.Close())
	}
	return errors.Join(errs...)
}

func (s *Server) isClosed() bool { return s.closed.Load() }

// Engines exposes the disks' engines, for tests and stats.
func (s *Server) Engines() []*engine.Engine { return s.engines }

// target returns this node's target of a chain, or nil.
func (s *Server) target(chain routing.ChainID) *target {
	s.tmu.RLock()
	defer s.tmu.RUnlock()
	return s.targets[chain]
}

// allTargets lists this node's targets.
func (s *Server) allTargets() []*target {
	s.tmu.RLock()
	defer s.tmu.RUnlock()
	out := make([]*target, 0, len(s.targets))
	for _, t := range s.targets {
		out = append(out, t)
	}
	return out
}

// route finds this node's target of the key's chain and checks the request's
// chain version against the routing information.
func (s *Server) route(chainID uint32, chainVer uint32) (*target, *routing.Info, *routing.Chain, error) {
	if err := s.fenced(); err != nil {
		return nil, nil, nil, err
	}
	t := s.target(routing.ChainID(chainID))
	if t == nil {
		return nil, nil, nil, rpc.Errorf(storageapi.CodeNoTarget, "node %d has no target of chain %d", s.cfg.Node, chainID)
	}
	info := s.cfg.Routing.Current()
	chain, ok := info.Chain(routing.ChainID(chainID))
	if !ok {
		return nil, nil, nil, rpc.Errorf(storageapi.CodeNoTarget, "chain %d is not in routing version %d", chainID, info.Version)
	}
	if chain.Version != chainVer {
		return nil, nil, nil, rpc.Errorf(storageapi.CodeChainVersion, "chain %d is at version %d, the request has %d", chainID, chain.Version, chainVer)
	}
	return t, info, chain, nil
}

func (t *target) key(c layout.ChunkID) engine.Key {
	return engine.Key{Chain: uint32(t.chain), Chunk: c}
}

func toWireMeta(chunk layout.ChunkID, m engine.Meta) storageapi.ChunkMeta {
	return storageapi.ChunkMeta{Chunk: chunk, ChainVer: m.ChainVer, CommitVer: m.CommitVer, UpdateVer: m.UpdateVer,
		Len: m.Len, Checksum: m.Checksum, ChunkSize: m.ChunkSize}
}

func (s *Server) handleStats(ctx context.Context, _ *storageapi.StatsReq, _ []byte) (*storageapi.StatsResp, []byte, error) {
	resp := &storageapi.StatsResp{Node: uint32(s.cfg.Node), IO: s.io.snapshot(), Incarnation: s.started,
		ReadLatency: s.io.readLat.snapshot(), WriteLatency: s.io.writeLat.snapshot()}
	for i, e := range s.engines {
		st := e.Stats()
		resp.Disks = append(resp.Disks, storageapi.DiskStats{Path: s.cfg.Disks[i], Chunks: uint64(st.Chunks), UsedBytes: uint64(st.UsedBytes),
			AllocatedBytes: uint64(st.AllocatedBytes), ChecksumErrors: uint64(st.ChecksumErrors), ReadOnly: st.ReadOnly, ReadOnlyReason: st.ReadOnlyReason,
			Full: st.Full, FullReason: st.FullReason})
		s.repairStats(i, &resp.Disks[i])
	}
	for _, t := range s.allTargets() {
		st := t.state.snapshot()
		resp.Targets = append(resp.Targets, storageapi.TargetStats{Target: uint32(t.id), Chain: uint32(t.chain), Disk: t.disk,
			Local: uint8(st.local), SyncTarget: st.syncTarget, SyncChunksDone: st.syncDone, SyncChunks: st.syncTotal, SyncBytesDone: st.syncBytes, SyncBytes: st.syncBytesTotal})
	}
	return resp, nil, nil
}

// ioCounters count the client I/O this node served (see storageapi.IOCounters).
type ioCounters struct {
	readOps, readBytes, writeOps, writeBytes atomic.Uint64
	readLat, writeLat                        latencyCounts
}

// latencyCounts count operations by how long they took
// (storageapi.LatencySlot).
type latencyCounts [storageapi.LatencySlots]atomic.Uint64

func (l *latencyCounts) add(d time.Duration) { l[storageapi.LatencySlot(d)].Add(1) }

func (l *latencyCounts) snapshot() []uint64 {
	out := make([]uint64, len(l))
	for i := range l {
		out[i] = l[i].Load()
	}
	return out
}

func (c *ioCounters) snapshot() storageapi.IOCounters {
	return storageapi.IOCounters{ReadOps: c.readOps.Load(), ReadBytes: c.readBytes.Load(),
		WriteOps: c.writeOps.Load(), WriteBytes: c.writeBytes.Load()}
}
