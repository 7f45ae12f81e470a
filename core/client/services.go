package client

import (
	"context"
	"log/slog"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
)

// Register says once that a service is alive; it returns the TTL after which
// mgmtd counts a silent service as gone.
func (m *Mgmtd) Register(ctx context.Context, kind, id, addr string) (time.Duration, error) {
	return m.register(ctx, &mgmtdapi.RegisterReq{Kind: kind, ID: id, Addr: addr})
}

func (m *Mgmtd) register(ctx context.Context, req *mgmtdapi.RegisterReq) (time.Duration, error) {
	resp, err := callPrimary[mgmtdapi.RegisterReq, mgmtdapi.RegisterResp](ctx, m, mgmtdapi.MethodRegister, req)
	if err != nil {
		return 0, err
	}
	return time.Duration(resp.TTLMillis) * time.Millisecond, nil
}

// Services lists the registered services of a kind ("" for all).
func (m *Mgmtd) Services(ctx context.Context, kind string) (*mgmtdapi.ListServicesResp, error) {
	return callPrimary[mgmtdapi.ListServicesReq, mgmtdapi.ListServicesResp](ctx, m, mgmtdapi.MethodListServices,
		&mgmtdapi.ListServicesReq{Kind: kind})
}

// KeepRegistered registers a service now and then every TTL/3 until ctx
// ends. Failures are logged and retried: a mgmtd failover only delays it.
func (m *Mgmtd) KeepRegistered(ctx context.Context, kind, id, addr string, log *slog.Logger) {
	m.keepRegistered(ctx, kind, id, addr, nil, log)
}

// keepRegistered is KeepRegistered with a report of the cache (nil: none)
// taken afresh for each registration.
func (m *Mgmtd) keepRegistered(ctx context.Context, kind, id, addr string, cache func() *mgmtdapi.CacheReport, log *slog.Logger) {
	every := time.Second
	for {
		req := &mgmtdapi.RegisterReq{Kind: kind, ID: id, Addr: addr}
		if cache != nil {
			req.Cache = cache()
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ttl, err := m.register(cctx, req)
		cancel()
		switch {
		case err == nil && ttl > 0:
			every = max(ttl/3, 50*time.Millisecond)
		case err != nil && ctx.Err() == nil && log != nil:
			log.Debug("register with mgmtd", "kind", kind, "id", id, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}
