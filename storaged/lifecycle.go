package storaged

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// Mgmtd is how a managed storage node reaches the primary cluster manager.
type Mgmtd interface {
	Heartbeat(ctx context.Context, req *mgmtdapi.HeartbeatReq) (*mgmtdapi.HeartbeatResp, error)
}

// targetState is a target's local state and how it got there.
//
// A managed target starts "rejoining": it reports offline until routing
// publishes it offline (or lastsrv), so every target that was away passes
// through recovery; then it reports online (up-to-date if it is the chain's
// lastsrv, whose data is the newest there is) and waits to be synced. A target
// that is up to date and has been published serving is "joined"; if routing
// then publishes it offline or lastsrv, it may be on the wrong side of a
// partition: it stops serving at once and rejoins from the start.
type targetState struct {
	mu        sync.Mutex
	local     routing.LocalState
	rejoining bool
	joined    bool

	syncTarget                     uint32 // recovery this node runs for its successor
	syncDone, syncTotal, syncBytes uint64
	syncBytesTotal                 uint64 // bytes of the chunks the recovery sends
}

type stateSnapshot struct {
	local                          routing.LocalState
	syncTarget                     uint32
	syncDone, syncTotal, syncBytes uint64
	syncBytesTotal                 uint64
}

func (ts *targetState) snapshot() stateSnapshot {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return stateSnapshot{local: ts.local, syncTarget: ts.syncTarget, syncDone: ts.syncDone, syncTotal: ts.syncTotal, syncBytes: ts.syncBytes, syncBytesTotal: ts.syncBytesTotal}
}

func (ts *targetState) get() routing.LocalState {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.local
}

// lifecycle runs a managed node's background work.
type lifecycle struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	lastOK  atomic.Int64 // unix nanos of the last accepted heartbeat
	started time.Time
	incarn  uint64   // drawn once per process: mgmtd tells a restart from a replay
	syncing sync.Map // chain -> struct{}: recoveries running
	fence   fenceLog
}

func (s *Server) startLifecycle() {
	ctx, cancel := context.WithCancel(context.Background())
	s.life.cancel = cancel
	s.life.started = time.Now()
	s.life.incarn = rand.Uint64() | 1
	for _, t := range s.allTargets() {
		t.state.local, t.state.rejoining = routing.LocalOffline, true
	}
	s.life.wg.Add(1)
	go func() {
		defer s.life.wg.Done()
		s.run(ctx)
	}()
}

func (s *Server) stopLifecycle() {
	if s.life.cancel != nil {
		s.life.cancel()
		s.life.wg.Wait()
	}
}

// fenced refuses service on a managed node that has not reached mgmtd for
// T/2: by T, mgmtd declares it failed and chains move on without it.
func (s *Server) fenced() error {
	if s.cfg.Mgmtd == nil {
		return nil
	}
	last := s.life.lastOK.Load()
	if last == 0 || time.Since(time.Unix(0, last)) > s.cfg.HeartbeatTimeout/2 {
		return rpc.Errorf(storageapi.CodeTargetNotServing, "node %d has not reached the cluster manager for T/2 (%v): not serving", s.cfg.Node, s.cfg.HeartbeatTimeout/2)
	}
	return nil
}

func (s *Server) run(ctx context.Context) {
	interval := s.cfg.HeartbeatTimeout / 6
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		info := s.cfg.Routing.Current()
		s.learnTargets(info)
		s.advanceStates(info)
		s.heartbeat(ctx, interval)
		if time.Since(s.life.started) > s.cfg.HeartbeatTimeout/2 {
			s.noteFencing() // not while starting: a node is fenced until its first heartbeat
		}
		s.startRecoveries(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.cfg.Routing.Changed():
		}
	}
}

// learnTargets adds the targets routing places on this node.
func (s *Server) learnTargets(info *routing.Info) {
	for _, c := range info.Chains {
		for _, rt := range c.Targets {
			if rt.Node != s.cfg.Node || s.target(c.ID) != nil {
				continue
			}
			if rt.Disk < 0 || rt.Disk >= len(s.engines) {
				s.log.Error("routing places a target on a disk this node does not have", "target", rt.ID, "disk", rt.Disk, "disks", len(s.engines))
				continue
			}
			t := &target{id: rt.ID, chain: c.ID, disk: rt.Disk, eng: s.engines[rt.Disk]}
			t.state.local, t.state.rejoining = routing.LocalOffline, true
			// A target of a brand-new chain with no data has nothing to recover.
			if c.Version == 1 && rt.Public == routing.Serving && !hasChunks(t) {
				t.state.local, t.state.rejoining = routing.UpToDate, false
			}
			s.tmu.Lock()
			if s.targets[c.ID] == nil {
				s.targets[c.ID] = t
			}
			s.tmu.Unlock()
		}
	}
}

func hasChunks(t *target) bool {
	e, _, err := t.eng.List(uint32(t.chain), layout.ChunkID{}, layout.ChunkID{}, 1, false)
	return err != nil || len(e) > 0
}

// advanceStates moves each target's local state on what routing publishes.
func (s *Server) advanceStates(info *routing.Info) {
	for _, t := range s.allTargets() {
		public := routing.Offline
		if c, ok := info.Chain(t.chain); ok {
			if i := c.Index(t.id); i >= 0 {
				public = c.Targets[i].Public
			}
		}
		ts := &t.state
		ts.mu.Lock()
		switch {
		case ts.rejoining:
			if public == routing.Offline || public == routing.LastSrv {
				ts.rejoining = false
				ts.local = routing.Online
				if public == routing.LastSrv {
					ts.local = routing.UpToDate // the newest copy there is
				}
				s.log.Info("target rejoining", "target", t.id, "chain", t.chain, "published", public, "reports", ts.local)
			}
		case ts.local == routing.UpToDate && public == routing.Serving:
			ts.joined = true
		case ts.joined && (public == routing.Offline || public == routing.LastSrv || public == routing.Waiting):
			// Published as failed while we serve: we may be cut off. Stop now.
			s.log.Warn("target published failed while serving: fencing it", "target", t.id, "chain", t.chain, "published", public)
			ts.local, ts.joined, ts.rejoining = routing.LocalOffline, false, true
		}
		ts.mu.Unlock()
	}
}

func (s *Server) heartbeat(ctx context.Context, timeout time.Duration) {
	req := &mgmtdapi.HeartbeatReq{Node: s.cfg.Node, Addr: s.cfg.Addr, Seq: uint64(time.Now().UnixNano()), Incarnation: s.life.incarn}
	for _, t := range s.allTargets() {
		local := t.state.get()
		if t.disk >= 0 && t.disk < len(s.engines) && s.engines[t.disk].Stats().ReadOnly {
			// A disk that had a write error cannot be trusted with its
			// chains' writes: report its targets offline so mgmtd takes them
			// out and the chains go on with the other replicas. They rejoin
			// through recovery after a restart. A full disk is another
			// matter: its targets keep serving (reads must go on), writes
			// fail with NoSpace until space returns (DiskReport.Full).
			local = routing.LocalOffline
		}
		full := t.disk >= 0 && t.disk < len(s.engines) && s.engines[t.disk].Stats().Full
		req.Targets = append(req.Targets, mgmtdapi.TargetReport{Target: t.id, Chain: t.chain, Local: local, Disk: t.disk, Full: full})
	}
	for i, e := range s.engines {
		st := e.Stats()
		d := mgmtdapi.DiskReport{Path: s.cfg.Disks[i], UsedBytes: uint64(st.AllocatedBytes), ReadOnly: st.ReadOnly, Full: st.Full,
			Encrypted: s.engines[i].Encrypted()}
		if sp, ok := statDisk(s.cfg.Disks[i]); ok {
			// What the file system under the disk can still give, its size,
			// and which it is (disks sharing one count its space once).
			d.FreeBytes, d.CapacityBytes, d.FS = sp.free, sp.capacity, sp.fs
		}
		req.Disks = append(req.Disks, d)
	}
	hctx, cancel := context.WithTimeout(ctx, max(timeout, 200*time.Millisecond))
	defer cancel()
	sent := time.Now()
	resp, err := s.cfg.Mgmtd.Heartbeat(hctx, req)
	if err != nil {
		if ctx.Err() == nil {
			s.life.fence.heartbeatFailed(err)
			s.log.Debug("heartbeat failed", "err", err)
		}
		return
	}
	// The lease counts from when the heartbeat left, not when the answer came
	// back; and it is renewed only once this node's routing is as new as
	// mgmtd's. A node frozen past its lease (SIGSTOP, a long GC pause) must
	// not, on waking, serve requests that name the chain versions it knew:
	// mgmtd may have moved its chains on while it slept.
	if resp.RoutingVersion > s.cfg.Routing.Current().Version {
		if _, err := s.cfg.Routing.Refresh(ctx, s.cfg.Routing.Current().Version); err != nil || s.cfg.Routing.Current().Version < resp.RoutingVersion {
			s.life.fence.heartbeatFailed(fmt.Errorf("routing refresh after the heartbeat: %v", err))
			s.log.Debug("routing refresh after heartbeat failed; lease not renewed", "err", err)
			return
		}
		s.advanceStates(s.cfg.Routing.Current())
	}
	s.life.lastOK.Store(sent.UnixNano())
}

// handleSyncDone: the predecessor has sent this target everything.
func (s *Server) handleSyncDone(ctx context.Context, req *storageapi.SyncDoneReq, _ []byte) (*storageapi.SyncDoneResp, []byte, error) {
	t := s.target(routing.ChainID(req.Chain))
	if t == nil || uint32(t.id) != req.Target {
		return nil, nil, rpc.Errorf(storageapi.CodeNoTarget, "node %d has no target %d of chain %d", s.cfg.Node, req.Target, req.Chain)
	}
	t.state.mu.Lock()
	defer t.state.mu.Unlock()
	if t.state.local == routing.UpToDate {
		// A repeated recovery (routing still showed the target syncing when
		// the first one ended) found it up to date: nothing to change.
		return &storageapi.SyncDoneResp{}, nil, nil
	}
	if t.state.local != routing.Online {
		return nil, nil, rpc.Errorf(rpc.FailedPrecondition, "target %d is %v, not being synced", t.id, t.state.local)
	}
	t.state.local = routing.UpToDate
	s.log.Info("target synced: up to date", "target", t.id, "chain", t.chain)
	return &storageapi.SyncDoneResp{}, nil, nil
}
