package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// A client can be cut off from a chain's head while the chain still reaches
// it (a partition between clients and one storage node): routing keeps the
// head, and every update sent to it waits out AttemptTimeout. Such a client
// writes through another serving replica of the chain instead, which relays
// the update to the head (storageapi.WriteReq.Relay). The head stays the one
// place an update enters the chain: deduplication, versions and ordering are
// unchanged, and a relayed retry of an update is recognised by its tag.

// relayHold is how long a node that failed to answer stays suspect: updates
// to chains it heads go through a relay until then, and then try it again.
const relayHold = 20 * time.Second

// suspects remembers the storage nodes this client recently failed to reach.
type suspects struct {
	mu    sync.Mutex
	until map[routing.NodeID]time.Time
}

func (s *suspects) mark(n routing.NodeID, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.until == nil {
		s.until = map[routing.NodeID]time.Time{}
	}
	s.until[n] = now.Add(relayHold)
}

func (s *suspects) clear(n routing.NodeID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.until, n)
}

func (s *suspects) suspect(n routing.NodeID, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.until[n]
	if ok && !now.Before(u) {
		delete(s.until, n)
		return false
	}
	return ok
}

// writeEntry picks the node an update of chain enters through: its head,
// unless the head's node is suspect and another serving replica's node is
// not, in which case that replica relays it (the first such one after the
// head, so one chain's relayed updates take one path).
func writeEntry(chain *routing.Chain, head routing.Target, suspect func(routing.NodeID) bool) (node routing.NodeID, relay bool) {
	if !suspect(head.Node) {
		return head.Node, false
	}
	for _, t := range chain.Targets {
		if t.ID != head.ID && t.Public == routing.Serving && t.Node != head.Node && !suspect(t.Node) {
			return t.Node, true
		}
	}
	return head.Node, false
}

// A write attempt the head has not answered within probeDelay makes the
// client ask the head's node something trivial (an empty batch read). A
// node that answers is alive and merely slow, and the write goes on
// waiting; one that does not answer within probeTimeout is taken as cut
// off: the attempt ends there, and the retry goes through a relay after
// about 3 s instead of AttemptTimeout. Ending an attempt early is safe: the
// retry carries the same tag, and the head applies an update once.
const (
	probeAfter   = time.Second
	probeTimeout = 2 * time.Second
	// probeSlowLink is the rate a write's payload is allowed to take on
	// its way out: the probe travels behind it on the same connection, so a
	// large payload on a slow link must not pass for a dead peer.
	probeSlowLink = 8 << 20 // bytes per second
)

// probeDelay is when an attempt sending n bytes is probed.
func probeDelay(n int) time.Duration {
	return probeAfter + time.Duration(int64(n)*int64(time.Second)/probeSlowLink)
}

// probeIfSilent watches one attempt to addr; stop ends the watch and
// reports whether the probe went unanswered (and cancelled the attempt).
func (c *ChunkIO) probeIfSilent(addr string, payload int, cancel context.CancelFunc) (stop func() bool) {
	done := make(chan struct{})
	var unanswered atomic.Bool
	go func() {
		t := time.NewTimer(probeDelay(payload))
		defer t.Stop()
		select {
		case <-done:
			return
		case <-t.C:
		}
		pctx, pcancel := context.WithTimeout(context.Background(), probeTimeout)
		defer pcancel()
		go func() {
			select {
			case <-done:
				pcancel() // the attempt ended: no need for the answer
			case <-pctx.Done():
			}
		}()
		_, _, err := c.storage.BatchRead(pctx, addr, &storageapi.BatchReadReq{})
		if err != nil && !rpc.FromPeer(err) && errors.Is(pctx.Err(), context.DeadlineExceeded) {
			select {
			case <-done:
			default:
				unanswered.Store(true)
				cancel()
			}
		}
	}()
	return func() bool { close(done); return unanswered.Load() }
}
