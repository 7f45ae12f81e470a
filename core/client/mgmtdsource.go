package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

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
		if rpc.CodeOf(err) == rpc.Unauthenticated {
			// No retry makes a wrong token right.
			return nil, fmt.Errorf("client: mgmtd at %v refused this client's cluster token: %w", addrs, err)
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
