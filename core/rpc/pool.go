package rpc

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// redialBackoff keeps a pool that still has a working connection from
// redialing a failing slot more often than this.
const redialBackoff = time.Second

// pool is a client's set of connections to one address: a fixed number of
// slots, each holding at most one connection, dialed lazily and replaced
// when broken. Calls use the least loaded usable connection; with none
// usable, a call waits for a dial.
type pool struct {
	c     *Client
	addr  string
	rr    atomic.Uint32 // rotates the scan start so ties spread out
	slots []slot
}

type slot struct {
	cc atomic.Pointer[clientConn]

	mu       sync.Mutex
	dial     *dialing // non-nil while a dial runs
	lastFail time.Time
}

// dialing is a dial in progress; cc and err are set before done closes.
type dialing struct {
	done chan struct{}
	cc   *clientConn
	err  error
}

func newPool(c *Client, addr string) *pool {
	return &pool{c: c, addr: addr, slots: make([]slot, c.opts.ConnsPerAddr)}
}

// get returns the least loaded usable connection, starting a background dial
// for an empty or broken slot, or dials and waits when nothing is usable.
func (p *pool) get(ctx context.Context, method Method) (*clientConn, error) {
	n := len(p.slots)
	start := int(p.rr.Add(1))
	var best *clientConn
	missing := -1
	for i := range n {
		k := (start + i) % n
		cc := p.slots[k].cc.Load()
		if cc != nil && cc.usable() {
			if best == nil || cc.load.Load() < best.load.Load() {
				best = cc
			}
		} else if missing < 0 {
			missing = k
		}
	}
	if best != nil {
		if missing >= 0 {
			p.fill(missing)
		}
		return best, nil
	}
	d := p.startDial(missing)
	select {
	case <-d.done:
		if d.err != nil {
			return nil, d.err
		}
		return d.cc, nil
	case <-ctx.Done():
		return nil, contextError(ctx, method)
	}
}

// fill redials slot k in the background unless it is dialing already or
// failed recently.
func (p *pool) fill(k int) {
	s := &p.slots[k]
	s.mu.Lock()
	skip := s.dial != nil || time.Since(s.lastFail) < redialBackoff
	s.mu.Unlock()
	if !skip {
		p.startDial(k)
	}
}

// startDial dials slot k, or joins the dial already running there. The dial
// is bounded by DialTimeout and the client's life, not by any one caller,
// since every waiter shares it.
func (p *pool) startDial(k int) *dialing {
	s := &p.slots[k]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dial != nil {
		return s.dial
	}
	d := &dialing{done: make(chan struct{})}
	started := p.c.spawn(func() {
		ctx, cancel := context.WithTimeout(p.c.ctx, p.c.opts.DialTimeout)
		cc, err := p.c.dialConn(ctx, p.addr)
		cancel()
		s.mu.Lock()
		s.dial = nil
		if err != nil {
			s.lastFail = time.Now()
		} else if p.c.closed.Load() {
			// Close ran while we dialed and could not see this connection.
			cc.fail(unavailable(nil, "client closed"))
			cc, err = nil, unavailable(nil, "client closed")
		} else if old := s.cc.Load(); old != nil && old.usable() {
			// A caller that saw the slot empty asked for this dial after an
			// earlier dial had filled it. Keep the working connection: one
			// replaced while usable would be held by no slot, and Close,
			// which closes the slots' connections, would wait for it forever.
			cc.fail(unavailable(nil, "a spare connection to %s", p.addr))
			cc = old
		} else {
			// The connection replaced is broken, or draining and closes
			// itself after its last call.
			s.cc.Store(cc)
		}
		s.mu.Unlock()
		if err != nil {
			p.c.log.Debug("dial failed", "addr", p.addr, "err", err)
		}
		d.cc, d.err = cc, err
		close(d.done)
	})
	if !started {
		d.err = unavailable(nil, "client closed")
		close(d.done)
		return d
	}
	s.dial = d
	return d
}

// close fails every connection of the pool.
func (p *pool) close(err *Error) {
	for k := range p.slots {
		s := &p.slots[k]
		s.mu.Lock()
		cc := s.cc.Swap(nil)
		s.mu.Unlock()
		if cc != nil {
			cc.fail(err)
		}
	}
}
