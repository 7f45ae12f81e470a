package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/rpc"
)

// Mgmtd calls a cluster's managers: reads (routing, who is primary) go to
// any of them that answers, changes and heartbeats to the primary, found by
// following NotPrimary redirects across the address list and remembered
// until it stops being primary. Safe for concurrent use.
type Mgmtd struct {
	rc    *rpc.Client
	addrs []string
	// AttemptTimeout bounds one call to one mgmtd, so a hung one does not
	// eat the caller's whole deadline. Default 3 s.
	AttemptTimeout time.Duration

	mu      sync.Mutex
	primary string // last known primary, "" when unknown
	good    string // last mgmtd that answered a read
}

// NewMgmtd returns a caller of the mgmtd at addrs.
func NewMgmtd(rc *rpc.Client, addrs []string) *Mgmtd {
	return &Mgmtd{rc: rc, addrs: slices.Clone(addrs), AttemptTimeout: 3 * time.Second}
}

// Addrs returns the configured addresses.
func (m *Mgmtd) Addrs() []string { return slices.Clone(m.addrs) }

// ErrNoMgmtd is wrapped by the errors of calls no mgmtd could answer.
var ErrNoMgmtd = errors.New("client: no cluster manager answered")

// CallPrimary calls method on the primary mgmtd among addrs (a one-off
// Mgmtd; keep a Mgmtd to remember the primary between calls).
func CallPrimary[Req, Resp any](ctx context.Context, rc *rpc.Client, addrs []string, method rpc.Method, req *Req) (*Resp, error) {
	return callPrimary[Req, Resp](ctx, NewMgmtd(rc, addrs), method, req)
}

// callPrimary tries the remembered primary, then every address, following
// redirects, and sweeps again with growing pauses until ctx ends while no
// primary answers (an election in progress). Errors other than NotPrimary
// and transport failures are the primary's answer and end the call.
func callPrimary[Req, Resp any](ctx context.Context, m *Mgmtd, method rpc.Method, req *Req) (*Resp, error) {
	pause := 50 * time.Millisecond
	var last error
	for {
		m.mu.Lock()
		queue := dedupe(append([]string{m.primary}, m.addrs...))
		m.mu.Unlock()
		tried := map[string]bool{}
		for len(queue) > 0 {
			addr := queue[0]
			queue = queue[1:]
			if tried[addr] {
				continue
			}
			tried[addr] = true
			resp, err := attempt[Req, Resp](ctx, m, addr, method, req)
			if err == nil {
				m.setPrimary(addr)
				return resp, nil
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w: %s: %w (last error: %w)", ErrNoMgmtd, method, ctx.Err(), err)
			}
			last = err
			switch {
			case rpc.CodeOf(err) == mgmtdapi.CodeNotPrimary:
				m.forgetPrimary(addr)
				if hint := mgmtdapi.NotPrimaryAddr(err); hint != "" && !tried[hint] {
					queue = append([]string{hint}, queue...)
				}
			case transient(err):
				m.forgetPrimary(addr)
			default:
				return nil, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %s: %w (last error: %w)", ErrNoMgmtd, method, ctx.Err(), last)
		case <-time.After(pause):
		}
		pause = min(2*pause, 250*time.Millisecond) // short: a failover is worth noticing at once
	}
}

// callAny calls method on the first mgmtd that answers without an error,
// starting with the last one that did. It does not wait for an election: any
// mgmtd can answer.
func callAny[Req, Resp any](ctx context.Context, m *Mgmtd, method rpc.Method, req *Req) (*Resp, error) {
	m.mu.Lock()
	queue := dedupe(append([]string{m.good}, m.addrs...))
	m.mu.Unlock()
	var errs []error
	for _, addr := range queue {
		resp, err := attempt[Req, Resp](ctx, m, addr, method, req)
		if err == nil {
			m.mu.Lock()
			m.good = addr
			m.mu.Unlock()
			return resp, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("%w: %s: %w", ErrNoMgmtd, method, errors.Join(errs...))
}

func attempt[Req, Resp any](ctx context.Context, m *Mgmtd, addr string, method rpc.Method, req *Req) (*Resp, error) {
	if m.AttemptTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.AttemptTimeout)
		defer cancel()
	}
	resp, _, err := rpc.Call[Req, Resp](ctx, m.rc, addr, method, req, nil)
	return resp, err
}

// transient reports a failure to reach one mgmtd: another may answer.
func transient(err error) bool {
	switch rpc.CodeOf(err) {
	case rpc.Unavailable, rpc.DeadlineExceeded, rpc.Canceled, rpc.Aborted:
		return true
	}
	return false
}

func (m *Mgmtd) setPrimary(addr string) {
	m.mu.Lock()
	m.primary = addr
	m.mu.Unlock()
}

func (m *Mgmtd) forgetPrimary(addr string) {
	m.mu.Lock()
	if m.primary == addr {
		m.primary = ""
	}
	m.mu.Unlock()
}

func dedupe(addrs []string) []string {
	out := addrs[:0:0]
	for _, a := range addrs {
		if a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Heartbeat sends a storage node's heartbeat to the primary.
func (m *Mgmtd) Heartbeat(ctx context.Context, req *mgmtdapi.HeartbeatReq) (*mgmtdapi.HeartbeatResp, error) {
	return callPrimary[mgmtdapi.HeartbeatReq, mgmtdapi.HeartbeatResp](ctx, m, mgmtdapi.MethodHeartbeat, req)
}

// SetChains creates or replaces chains through the primary.
func (m *Mgmtd) SetChains(ctx context.Context, req *mgmtdapi.SetChainsReq) (*mgmtdapi.SetChainsResp, error) {
	return callPrimary[mgmtdapi.SetChainsReq, mgmtdapi.SetChainsResp](ctx, m, mgmtdapi.MethodSetChains, req)
}

// Audit records an admin action a front end did itself, through the primary.
func (m *Mgmtd) Audit(ctx context.Context, rec mgmtdapi.AuditRecord) error {
	_, err := callPrimary[mgmtdapi.AuditReq, mgmtdapi.AuditResp](ctx, m, mgmtdapi.MethodAudit, &mgmtdapi.AuditReq{Record: rec})
	return err
}

// ListAudit reads the audit trail, newest first (from the primary).
func (m *Mgmtd) ListAudit(ctx context.Context, req *mgmtdapi.ListAuditReq) (*mgmtdapi.ListAuditResp, error) {
	return callPrimary[mgmtdapi.ListAuditReq, mgmtdapi.ListAuditResp](ctx, m, mgmtdapi.MethodListAudit, req)
}

// SetNodeHeld puts a storage node into maintenance, or ends it, through the
// primary.
func (m *Mgmtd) SetNodeHeld(ctx context.Context, req *mgmtdapi.SetNodeHeldReq) (*mgmtdapi.SetNodeHeldResp, error) {
	return callPrimary[mgmtdapi.SetNodeHeldReq, mgmtdapi.SetNodeHeldResp](ctx, m, mgmtdapi.MethodSetNodeHeld, req)
}

// SetTargetHeld holds a target offline, or releases it, through the primary.
func (m *Mgmtd) SetTargetHeld(ctx context.Context, req *mgmtdapi.SetTargetHeldReq) (*mgmtdapi.SetTargetHeldResp, error) {
	return callPrimary[mgmtdapi.SetTargetHeldReq, mgmtdapi.SetTargetHeldResp](ctx, m, mgmtdapi.MethodSetTargetHeld, req)
}

// ListNodes asks the primary for the services it knows; while no primary is
// elected, a mgmtd answers with a partial list (Partial set).
func (m *Mgmtd) ListNodes(ctx context.Context) (*mgmtdapi.ListNodesResp, error) {
	return callPrimary[mgmtdapi.ListNodesReq, mgmtdapi.ListNodesResp](ctx, m, mgmtdapi.MethodListNodes, &mgmtdapi.ListNodesReq{})
}

// GetRouting fetches routing newer than have from any mgmtd.
func (m *Mgmtd) GetRouting(ctx context.Context, have uint64) (*mgmtdapi.GetRoutingResp, error) {
	return callAny[mgmtdapi.GetRoutingReq, mgmtdapi.GetRoutingResp](ctx, m, mgmtdapi.MethodGetRouting, &mgmtdapi.GetRoutingReq{Have: have})
}

// GetPrimary asks any mgmtd who the primary is.
func (m *Mgmtd) GetPrimary(ctx context.Context) (*mgmtdapi.GetPrimaryResp, error) {
	return callAny[mgmtdapi.GetPrimaryReq, mgmtdapi.GetPrimaryResp](ctx, m, mgmtdapi.MethodGetPrimary, &mgmtdapi.GetPrimaryReq{})
}
