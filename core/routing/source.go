package routing

import (
	"context"
	"sync"
)

// Source supplies the newest routing information. Current never blocks;
// Changed returns a channel closed when a newer version than the one returned
// by the last Current arrives, so waiters can select on it.
type Source interface {
	Current() *Info
	Changed() <-chan struct{}
	// Refresh asks for a newer version than have (for example after a peer
	// reported a newer chain version) and returns the newest known.
	Refresh(ctx context.Context, have uint64) (*Info, error)
}

// Static is a Source that tests and the in-process harness set by hand.
// Callers must treat a returned *Info as read-only.
type Static struct {
	mu      sync.Mutex
	info    *Info
	changed chan struct{}
}

// NewStatic returns a Static holding info.
func NewStatic(info *Info) *Static {
	if info == nil {
		info = &Info{Nodes: map[NodeID]Node{}, Chains: map[ChainID]*Chain{}}
	}
	return &Static{info: info, changed: make(chan struct{})}
}

func (s *Static) Current() *Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

func (s *Static) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Static) Refresh(ctx context.Context, have uint64) (*Info, error) {
	return s.Current(), nil
}

// Update applies fn to a copy of the current info, bumps its version, and
// publishes it.
func (s *Static) Update(fn func(*Info)) *Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.info.Clone()
	fn(next)
	next.Version = s.info.Version + 1
	s.info = next
	close(s.changed)
	s.changed = make(chan struct{})
	return next
}
