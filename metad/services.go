package metad

import (
	"context"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/metad/ns"
)

// startRegistry keeps this metad registered with mgmtd and reaps sessions.
func (s *Server) startRegistry(ctx context.Context, cfg Config) {
	id := cfg.ID
	if id == "" {
		id = cfg.Addr
	}
	every := cfg.ReapEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	s.bg.Add(2)
	go func() {
		defer s.bg.Done()
		cfg.Mgmtd.KeepRegistered(ctx, mgmtdapi.KindMetad, id, cfg.Addr, s.log)
	}()
	go func() {
		defer s.bg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
			if n, err := s.reapOnce(ctx, cfg.Mgmtd); err != nil {
				s.log.Debug("session reaping skipped", "err", err)
			} else if n > 0 {
				s.metrics.sessionsReaped(n)
				s.log.Info("reaped write sessions of clients that went away", "sessions", n)
			}
		}
	}()
}

// reapOnce closes the write sessions of clients mgmtd no longer lists as
// alive. It acts only on a complete list (a young primary may not have heard
// from every live client yet). Every metad may run it: closing a session is
// idempotent.
func (s *Server) reapOnce(ctx context.Context, m *client.Mgmtd) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	resp, err := m.Services(cctx, mgmtdapi.KindClient)
	cancel()
	if err != nil || !resp.Complete {
		return 0, err
	}
	live := map[string]bool{}
	for _, sv := range resp.Services {
		if sv.Alive {
			live[sv.ID] = true
		}
	}
	dead, err := s.ns.DeadSessions(ctx, func(c ns.ClientID) bool { return live[string(c)] })
	if err != nil {
		return 0, err
	}
	for i, sess := range dead {
		// The client died without reporting its last writes: the length
		// comes from storage, and its writes count as a change (Gen moves).
		hint := &ns.LengthHint{Wrote: true}
		if in, err := s.ns.Stat(ctx, sess.Ino); err == nil && in.Type == ns.TypeFile && s.storage.RPC != nil && s.routing != nil && in.Layout.TableID != 0 {
			n, err := s.storageLength(ctx, in)
			if err != nil {
				return i, err // storage unreachable: try again next round
			}
			hint.TruncateVer, hint.Length = in.TruncateVer, n
		}
		if _, err := s.ns.Close(ctx, sess, hint); err != nil {
			return i, err
		}
	}
	return len(dead), nil
}
