package mgmtd

import (
	"context"
	"fmt"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// handleHeartbeat renews a storage node's liveness and records what it
// reports. Only the primary takes heartbeats. A node's address goes to the
// KV store (and into routing) when it is new or changed; everything else a
// heartbeat carries lives in the term's memory.
func (s *Server) handleHeartbeat(ctx context.Context, req *mgmtdapi.HeartbeatReq, _ []byte) (*mgmtdapi.HeartbeatResp, []byte, error) {
	t := s.primaryTerm()
	if t == nil {
		return nil, nil, s.notPrimary()
	}
	now := time.Now()
	s.mu.Lock()
	if s.term != t {
		s.mu.Unlock()
		return nil, nil, s.notPrimary()
	}
	var gap time.Duration
	if n := t.nodes[req.Node]; n != nil && n.heard {
		gap = now.Sub(n.last)
	}
	changed, err := t.heartbeat(req, now, s.cfg.HeartbeatTimeout)
	s.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	s.metrics.heartbeat(gap, s.cfg.HeartbeatTimeout)
	if changed {
		s.kickScan()
	}
	info := s.cache.Load()
	if info == nil || (req.Addr != "" && info.Nodes[req.Node].Addr != req.Addr) {
		info, err = s.update(ctx, func(cur *routing.Info) (*change, error) {
			if n, ok := cur.Nodes[req.Node]; req.Addr == "" || ok && n.Addr == req.Addr {
				return nil, nil
			}
			s.log.Info("node address recorded", "node", req.Node, "addr", req.Addr)
			return &change{nodes: []routing.Node{{ID: req.Node, Addr: req.Addr}}}, nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	T := s.cfg.HeartbeatTimeout
	return &mgmtdapi.HeartbeatResp{
		RoutingVersion: info.Version,
		LeaseSeconds:   uint32((T + time.Second - 1) / time.Second),
		LeaseMillis:    uint64(T / time.Millisecond),
	}, nil, nil
}

// heartbeat applies one heartbeat to the term's view. It refuses a sequence
// number not newer than the last one from the same process (same
// incarnation); a new incarnation starts over, and so does a node of an older
// build (no incarnation) that was declared failed, since it has restarted.
// changed reports a change that the chain scan must look at: a target's
// local state, a target gone from the report, or a failed node back.
func (t *term) heartbeat(req *mgmtdapi.HeartbeatReq, now time.Time, timeout time.Duration) (changed bool, err error) {
	for _, r := range req.Targets {
		if r.Local < routing.UpToDate || r.Local > routing.LocalOffline {
			return false, rpc.Errorf(rpc.InvalidArgument, "target %d: %s is not a local state", r.Target, fmt.Sprint(r.Local))
		}
	}
	n := t.node(req.Node, now)
	if n.heard {
		restarted := req.Incarnation != n.incarnation || (req.Incarnation == 0 && !t.alive(n, now, timeout))
		if !restarted && req.Seq <= n.seq {
			return false, rpc.Errorf(mgmtdapi.CodeStaleHeartbeat,
				"heartbeat %d of node %d is not newer than %d", req.Seq, req.Node, n.seq)
		}
	}
	if n.failed {
		n.failed, changed = false, true
	}
	n.heard, n.incarnation, n.seq = true, req.Incarnation, req.Seq
	n.last, n.lastWall = now, time.Now().UnixNano()
	if req.Addr != "" {
		n.addr = req.Addr
	}
	hosts := make(map[routing.TargetID]bool, len(req.Targets))
	for _, r := range req.Targets {
		hosts[r.Target] = true
		ts := targetState{node: req.Node, local: r.Local, full: r.Full}
		if old, ok := t.targets[r.Target]; !ok || old != ts {
			changed = true
		}
		t.targets[r.Target] = ts
	}
	for id := range n.hosts {
		if !hosts[id] && t.targets[id].node == req.Node {
			delete(t.targets, id) // no longer reported: offline from now on
			changed = true
		}
	}
	n.hosts = hosts
	n.reports = append([]mgmtdapi.TargetReport(nil), req.Targets...)
	n.disks = append([]mgmtdapi.DiskReport(nil), req.Disks...)
	return changed, nil
}
