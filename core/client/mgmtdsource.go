package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/routing"
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

// MgmtdSource is a routing.Source fed by the cluster managers: it polls any
// reachable mgmtd for routing newer than it holds, and fetches at once on
// Refresh. Routing only moves forward: a version not newer than the one held
// is ignored.
type MgmtdSource struct {
	m    *Mgmtd
	poll time.Duration

	fetchMu sync.Mutex // one fetch at a time

	mu            sync.Mutex
	info          *routing.Info
	bootstrapping bool
	changed       chan struct{}

	ctx    context.Context // ends at Close, cutting a fetch short
	cancel context.CancelFunc
	done   chan struct{}
}

var _ routing.Source = (*MgmtdSource)(nil)

// NewMgmtdSource loads routing from any of the mgmtd at addrs, waiting (as
// long as ctx allows) until one answers, then polls every poll (default 1 s)
// until Close.
func NewMgmtdSource(ctx context.Context, addrs []string, rc *rpc.Client, poll time.Duration) (*MgmtdSource, error) {
	if len(addrs) == 0 {
		return nil, errors.New("client: no mgmtd addresses")
	}
	if poll <= 0 {
		poll = time.Second
	}
	s := &MgmtdSource{m: NewMgmtd(rc, addrs), poll: poll, changed: make(chan struct{}), done: make(chan struct{})}
	pause := 50 * time.Millisecond
	for {
		err := s.fetch(ctx)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("client: load routing from %v: %w", addrs, err)
		case <-time.After(pause):
		}
		pause = min(2*pause, poll)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.loop()
	return s, nil
}

// Mgmtd returns the caller the source uses, for calls to the same cluster
// managers.
func (s *MgmtdSource) Mgmtd() *Mgmtd { return s.m }

func (s *MgmtdSource) loop() {
	defer close(s.done)
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(s.ctx, max(s.poll, time.Second))
		_ = s.fetch(ctx) // a failed poll is retried at the next tick
		cancel()
	}
}

// fetch asks for routing newer than the one held and installs it.
func (s *MgmtdSource) fetch(ctx context.Context) error {
	s.fetchMu.Lock()
	defer s.fetchMu.Unlock()
	var have uint64
	s.mu.Lock()
	if s.info != nil {
		have = s.info.Version
	}
	s.mu.Unlock()
	resp, err := s.m.GetRouting(ctx, have)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bootstrapping = resp.Bootstrapping
	in := resp.Info
	if in == nil || (s.info != nil && in.Version <= s.info.Version) {
		return nil // nothing newer
	}
	if in.Nodes == nil {
		in.Nodes = map[routing.NodeID]routing.Node{}
	}
	if in.Chains == nil {
		in.Chains = map[routing.ChainID]*routing.Chain{}
	}
	s.info = in
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

// Current returns the newest routing held; treat it as read-only.
func (s *MgmtdSource) Current() *routing.Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

// Changed returns a channel closed when newer routing arrives.
func (s *MgmtdSource) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Bootstrapping reports whether the last answer said a new primary is still
// hearing from everyone (routing may lag reality; do not act on absences).
func (s *MgmtdSource) Bootstrapping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bootstrapping
}

// Refresh fetches at once and returns the newest routing held (which may
// still be no newer than have when the mgmtd know nothing newer).
func (s *MgmtdSource) Refresh(ctx context.Context, have uint64) (*routing.Info, error) {
	if cur := s.Current(); cur.Version > have {
		return cur, nil
	}
	if err := s.fetch(ctx); err != nil {
		return s.Current(), err
	}
	return s.Current(), nil
}

// Close stops polling. Safe to call twice.
func (s *MgmtdSource) Close() {
	s.cancel()
	<-s.done
}
