package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// clientConn is one connection of a client: calls register under a fresh
// request id, their frames go through the coalescing writer, and a reader
// goroutine hands each response to the call waiting for its id.
type clientConn struct {
	cl   *Client
	addr string
	conn net.Conn
	w    *connWriter
	peer Limits // the server's receive limits, from its hello-ack

	nextID   atomic.Uint64
	load     atomic.Int32 // calls registered and not yet finished
	draining atomic.Bool  // the server said go away: no new calls
	broken   atomic.Bool  // failed or closed: no new calls

	mu    sync.Mutex
	calls map[uint64]*call // nil once the connection failed
	err   error            // why it failed
	once  sync.Once
}

// call is one outstanding request; done receives exactly one value, after
// resp or err is set.
type call struct {
	done chan struct{}
	resp Frame
	err  error

	// decode fills in the caller's response from a message. The reader
	// runs it for small messages (decoded then set), on its long-lived
	// stack, sparing the caller's goroutine the stack growth the CBOR
	// decoder causes; the caller runs it otherwise.
	decode    func([]byte) error
	decoded   bool
	decodeErr error
}

// dialConn connects to addr and performs the handshake. Errors are *Error:
// Unavailable for transport problems, or the code the server refused with
// (Unauthenticated for a wrong token).
func (cl *Client) dialConn(ctx context.Context, addr string) (*clientConn, error) {
	dial := cl.opts.Dial
	if dial == nil {
		d := net.Dialer{}
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	conn, err := dial(ctx, addr)
	if err != nil {
		return nil, unavailable(err, "dial %s", addr)
	}
	tuneConn(conn, &cl.opts)

	// Bound the handshake by ctx: its deadline, and its cancellation.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	peer, fr, err := cl.handshake(conn)
	stop()
	if err != nil {
		conn.Close()
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, unavailable(err, "handshake with %s", addr)
	}
	_ = conn.SetDeadline(time.Time{})

	cc := &clientConn{cl: cl, addr: addr, conn: conn, peer: peer, calls: make(map[uint64]*call)}
	cc.w = newConnWriter(conn, cl.opts.WriteTimeout, func(err error) {
		cc.fail(unavailable(err, "write to %s", addr))
	})
	cl.live.Store(cc, struct{}{})
	cl.wg.Add(1)
	go cc.readLoop(fr)
	return cc, nil
}

// handshake sends the hello and reads the answer.
func (cl *Client) handshake(conn net.Conn) (Limits, *frameReader, error) {
	lim := cl.opts.Limits
	hello, err := marshal(&helloMsg{Token: cl.opts.Token, MaxMessage: lim.MaxMessage, MaxPayload: lim.MaxPayload})
	if err != nil {
		return Limits{}, nil, err
	}
	if err := WriteFrame(conn, Header{Kind: KindHello}, hello, nil); err != nil {
		return Limits{}, nil, err
	}
	fr := newFrameReader(conn, readBufferSize, lim)
	f, err := fr.nextHandshake()
	if err != nil {
		return Limits{}, nil, err
	}
	switch f.Kind {
	case KindHelloAck:
		var ack helloAckMsg
		if err := unmarshal(f.Msg, &ack); err != nil {
			return Limits{}, nil, err
		}
		return Limits{MaxMessage: ack.MaxMessage, MaxPayload: ack.MaxPayload}.withDefaults(), fr, nil
	case KindError:
		e := decodeError(f.Code, f.Msg)
		e.Message = "server refused connection: " + e.Message
		return Limits{}, nil, e
	}
	return Limits{}, nil, fmt.Errorf("unexpected %s frame during handshake", f.Kind)
}

// usable reports whether new calls may use the connection.
func (cc *clientConn) usable() bool {
	return !cc.broken.Load() && !cc.draining.Load()
}

// register adds c under a new request id.
func (cc *clientConn) register(c *call) (uint64, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.calls == nil {
		return 0, cc.err
	}
	id := cc.nextID.Add(1)
	cc.calls[id] = c
	cc.load.Add(1)
	return id, nil
}

// forget removes id if it is still pending and reports whether it was.
func (cc *clientConn) forget(id uint64) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if _, ok := cc.calls[id]; !ok {
		return false
	}
	delete(cc.calls, id)
	return true
}

// finish ends a call's use of the connection; a draining connection closes
// after its last call.
func (cc *clientConn) finish() {
	if cc.load.Add(-1) == 0 && cc.draining.Load() {
		cc.fail(unavailable(nil, "connection to %s drained after go-away", cc.addr))
	}
}

// readLoop delivers responses until the connection fails.
func (cc *clientConn) readLoop(fr *frameReader) {
	defer cc.cl.wg.Done()
	for {
		f, err := fr.next()
		if err != nil {
			cc.fail(unavailable(err, "connection to %s lost", cc.addr))
			return
		}
		switch f.Kind {
		case KindResponse:
			cc.mu.Lock()
			c := cc.calls[f.ID]
			delete(cc.calls, f.ID)
			cc.mu.Unlock()
			if c != nil { // nil: the caller gave up already
				c.resp = f
				if f.Code == OK && len(f.Msg) <= inlineDecode {
					c.decodeErr, c.decoded = c.decode(f.Msg), true
				}
				c.done <- struct{}{}
			}
		case KindGoAway:
			cc.draining.Store(true)
			if cc.load.Load() == 0 {
				cc.fail(unavailable(nil, "connection to %s closed after go-away", cc.addr))
			}
		case KindError:
			e := decodeError(f.Code, f.Msg)
			cc.cl.log.Warn("server closed the connection", "addr", cc.addr, "code", e.Code.String(), "reason", e.Message)
			cc.fail(unavailable(e, "server %s closed the connection", cc.addr))
			return
		default:
			cc.cl.log.Warn("unexpected frame from server; closing connection", "addr", cc.addr, "kind", f.Kind.String())
			cc.fail(unavailable(nil, "unexpected %s frame from %s", f.Kind, cc.addr))
			return
		}
	}
}

// fail closes the connection and fails every pending call with err. It is
// idempotent; the first error wins.
func (cc *clientConn) fail(err *Error) {
	cc.once.Do(func() {
		cc.broken.Store(true)
		cc.cl.live.Delete(cc)
		// Close before failing the calls: once the socket is closed the
		// writer can no longer read a payload whose caller has returned.
		cc.w.stop(false, err)
		cc.conn.Close()
		cc.mu.Lock()
		calls := cc.calls
		cc.calls, cc.err = nil, err
		cc.mu.Unlock()
		for _, c := range calls {
			c.err = err
			c.done <- struct{}{}
		}
	})
}
