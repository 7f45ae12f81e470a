package mgmtd

import (
	"context"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/routing"
)

// Routing is served by every mgmtd from the KV store. A cached copy is kept
// and re-read only when the routing version moved: every change of routing
// bumps the version in the same transaction (write.go), so an equal version
// means equal routing. Cached values are shared and never modified.

// loadRouting returns the newest routing, reading the KV store only for the
// version unless it moved.
func (s *Server) loadRouting(ctx context.Context) (*routing.Info, error) {
	cached := s.cache.Load()
	var out *routing.Info
	err := s.cfg.KV.RunRead(ctx, func(tx kv.ReadTxn) error {
		ver, err := readVersion(ctx, tx)
		if err != nil {
			return err
		}
		if cached != nil && ver == cached.Version {
			out = cached
			return nil
		}
		out, err = readRouting(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.storeRouting(out)
	return out, nil
}

// storeRouting caches info unless a newer version is cached already.
func (s *Server) storeRouting(info *routing.Info) {
	for {
		cur := s.cache.Load()
		if cur != nil && cur.Version >= info.Version {
			return
		}
		if s.cache.CompareAndSwap(cur, info) {
			return
		}
	}
}

// handleGetRouting serves the routing, or nothing when the caller has the
// newest version (Have 0 always gets it).
func (s *Server) handleGetRouting(ctx context.Context, req *mgmtdapi.GetRoutingReq, _ []byte) (*mgmtdapi.GetRoutingResp, []byte, error) {
	info, err := s.loadRouting(ctx)
	if err != nil {
		return nil, nil, err
	}
	resp := &mgmtdapi.GetRoutingResp{Bootstrapping: s.bootstrapping()}
	if req.Have == 0 || req.Have < info.Version {
		resp.Info = info
	}
	return resp, nil, nil
}

// bootstrapping reports whether routing may not yet reflect every node: the
// primary is in its bootstrapping window, or, seen from another mgmtd, the
// lease is younger than the window or no primary is elected.
func (s *Server) bootstrapping() bool {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term != nil {
		return s.term.bootstrapping(now)
	}
	if !s.leaseKnown || now.UnixNano() >= s.lease.Expiry {
		return true
	}
	return now.UnixNano() < s.lease.Start+int64(s.cfg.Bootstrapping)
}
