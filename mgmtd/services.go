package mgmtd

import (
	"context"
	"sort"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/rpc"
)

// The service registry: metad, gateways and clients say they are alive every
// TTL/3 and the primary remembers when it last heard from each. Clients find
// metad through it, and metad reaps the write sessions of clients that went
// silent. It lives in the term, so a new primary starts empty and says its
// list is incomplete until a whole TTL has passed.

// serviceState is one registered service.
type serviceState struct {
	addr     string
	last     time.Time // monotonic
	lastWall int64
	cache    *mgmtdapi.CacheReport // a client's, as it last reported
}

// serviceTTL is how long a silent service still counts as alive.
func (s *Server) serviceTTL() time.Duration { return s.cfg.HeartbeatTimeout }

func (s *Server) handleRegister(ctx context.Context, req *mgmtdapi.RegisterReq, _ []byte) (*mgmtdapi.RegisterResp, []byte, error) {
	if req.Kind == "" || req.ID == "" || len(req.Kind) > 64 || len(req.ID) > 256 || len(req.Addr) > 256 {
		return nil, nil, rpc.Errorf(rpc.InvalidArgument, "register: kind and id are required (kind <= 64, id and addr <= 256 bytes)")
	}
	t := s.primaryTerm()
	if t == nil {
		return nil, nil, s.notPrimary()
	}
	now := time.Now()
	s.mu.Lock()
	k := [2]string{req.Kind, req.ID}
	st := t.services[k]
	if st == nil {
		if len(t.services) >= maxServices {
			s.mu.Unlock()
			return nil, nil, rpc.Errorf(rpc.InvalidArgument, "register: registry full")
		}
		st = &serviceState{}
		t.services[k] = st
	}
	st.addr, st.last, st.lastWall, st.cache = req.Addr, now, now.UnixNano(), req.Cache
	s.mu.Unlock()
	return &mgmtdapi.RegisterResp{TTLMillis: uint64(s.serviceTTL() / time.Millisecond)}, nil, nil
}

// maxServices bounds the registry; services gone for long are dropped.
const maxServices = 1 << 16

func (s *Server) handleListServices(ctx context.Context, req *mgmtdapi.ListServicesReq, _ []byte) (*mgmtdapi.ListServicesResp, []byte, error) {
	t := s.primaryTerm()
	if t == nil {
		return nil, nil, s.notPrimary()
	}
	now, ttl := time.Now(), s.serviceTTL()
	resp := &mgmtdapi.ListServicesResp{Services: []mgmtdapi.ServiceStatus{}}
	s.mu.Lock()
	resp.Complete = now.Sub(t.since) > ttl
	for k, st := range t.services {
		age := now.Sub(st.last)
		if age > 10*ttl {
			delete(t.services, k) // long gone: forget it
			continue
		}
		if req.Kind != "" && k[0] != req.Kind {
			continue
		}
		resp.Services = append(resp.Services, mgmtdapi.ServiceStatus{Kind: k[0], ID: k[1], Addr: st.addr, LastSeen: st.lastWall, Alive: age <= ttl, Cache: st.cache})
	}
	s.mu.Unlock()
	sort.Slice(resp.Services, func(i, j int) bool {
		a, b := resp.Services[i], resp.Services[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.ID < b.ID
	})
	return resp, nil, nil
}
