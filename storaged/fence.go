package storaged

import (
	"sync/atomic"
	"time"
)

// fenceLog logs a managed node's fencing once per change, with its cause:
// it stops serving when it has not reached mgmtd for T/2, and serves again
// once a heartbeat is accepted.
type fenceLog struct {
	fenced  atomic.Bool
	lastErr atomic.Pointer[string] // the last heartbeat failure
}

// heartbeatFailed notes why the last heartbeat failed.
func (f *fenceLog) heartbeatFailed(err error) {
	msg := err.Error()
	f.lastErr.Store(&msg)
}

// noteFencing logs a change of the node's fencing since the last call.
func (s *Server) noteFencing() {
	fenced := s.fenced() != nil
	if s.life.fence.fenced.Swap(fenced) == fenced {
		return
	}
	if !fenced {
		s.log.Info("reached mgmtd again: serving", "targets", len(s.allTargets()))
		return
	}
	cause := "no heartbeat accepted yet"
	if p := s.life.fence.lastErr.Load(); p != nil {
		cause = *p
	}
	var since any = "never"
	if last := s.life.lastOK.Load(); last != 0 {
		since = time.Since(time.Unix(0, last)).Round(time.Millisecond)
	}
	s.log.Warn("not reaching mgmtd for half the heartbeat timeout: serving nothing until a heartbeat is accepted",
		"last_accepted_ago", since, "last_error", cause)
}
