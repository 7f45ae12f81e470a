package rpc

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"github.com/flyfs/flyfs/core/durability"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// readBufferSize is the read buffer of a connection; payloads larger than it
// bypass it.
const readBufferSize = 64 << 10

// inlineDecode is the largest message decoded by a connection's reader
// goroutine rather than by the goroutine that will use it.
const inlineDecode = 4 << 10

// serverConn is one client connection on a server: a reader goroutine
// (serve) that decodes frames and starts handlers, and a writer goroutine
// that sends their responses.
type serverConn struct {
	s      *Server
	conn   net.Conn
	remote string
	w      *connWriter
	fr     *frameReader
	peer   Limits        // the client's receive limits, from its hello
	sem    chan struct{} // one slot per running handler

	deadline time.Time  // the read deadline set on conn; reader goroutine only
	clock    frameClock // timing of the frame being read; reader goroutine only

	mu       sync.Mutex
	inflight map[uint64]*serverCall
	closing  chan struct{} // closed by close
	once     sync.Once
	handlers sync.WaitGroup
}

// serverCall is a running request, found by id when its cancel frame comes.
type serverCall struct {
	cancel   context.CancelFunc
	canceled atomic.Bool // the client gave up: send no response
}

func newServerConn(s *Server, c net.Conn) *serverConn {
	sc := &serverConn{
		s:        s,
		conn:     c,
		remote:   c.RemoteAddr().String(),
		sem:      make(chan struct{}, s.opts.MaxConcurrentPerConn),
		inflight: make(map[uint64]*serverCall),
		closing:  make(chan struct{}),
	}
	sc.fr = newFrameReader(connReader{sc}, readBufferSize, s.opts.Limits)
	sc.w = newConnWriter(c, s.opts.WriteTimeout, func(err error) {
		sc.s.log.Debug("write failed; closing connection", "remote", sc.remote, "err", err)
		sc.close(err)
	})
	return sc
}

// serve reads frames until the connection ends. It recovers from panics so
// that no input can take the server down.
func (sc *serverConn) serve() {
	defer sc.s.connDone(sc)
	defer func() {
		if r := recover(); r != nil {
			sc.s.log.Error("panic serving connection; closing it", "remote", sc.remote, "panic", r, "stack", string(debug.Stack()))
		}
		sc.close(errors.New("connection done"))
		sc.handlers.Wait()
	}()

	if !sc.handshake() {
		return
	}
	for {
		f, err := sc.readFrame()
		if err != nil {
			sc.readFailed(err)
			return
		}
		switch f.Kind {
		case KindRequest:
			if f.refused != nil {
				sc.respond(f.ID, f.Method, nil, nil, f.refused, nil)
				continue
			}
			if !sc.dispatch(f) {
				return
			}
		case KindCancel:
			sc.cancel(f.ID)
		default:
			sc.refuse(InvalidArgument, fmt.Sprintf("unexpected %s frame", f.Kind), "protocol violation")
			return
		}
	}
}

// handshake reads the client's hello, checks the token and answers. It
// reports whether the connection may carry calls.
func (sc *serverConn) handshake() bool {
	sc.setReadDeadline(time.Now().Add(sc.s.opts.HandshakeTimeout))
	f, err := sc.fr.nextHandshake()
	if err != nil {
		switch {
		case errors.Is(err, ErrFrameTooLarge) && f.Kind != KindHello:
			sc.refuse(Unauthenticated, fmt.Sprintf("first frame must be hello, got %s", f.Kind), "handshake refused")
		case isProtocolError(err):
			sc.refuse(Unauthenticated, "expected hello: "+err.Error(), "handshake failed")
		case errors.Is(err, io.EOF): // a port probe or health check
			sc.s.log.Debug("connection closed before hello", "remote", sc.remote)
		default:
			sc.s.log.Warn("handshake failed; closing connection", "remote", sc.remote, "err", err)
		}
		return false
	}
	if f.Kind != KindHello {
		sc.refuse(Unauthenticated, fmt.Sprintf("first frame must be hello, got %s", f.Kind), "handshake refused")
		return false
	}
	var hello helloMsg
	if err := unmarshal(f.Msg, &hello); err != nil {
		sc.refuse(Unauthenticated, "undecodable hello: "+err.Error(), "handshake refused")
		return false
	}
	if want := sc.s.opts.Token; want != "" {
		// Compare digests so that neither content nor length leaks through timing.
		got, exp := sha256.Sum256([]byte(hello.Token)), sha256.Sum256([]byte(want))
		if subtle.ConstantTimeCompare(got[:], exp[:]) != 1 {
			reason := "wrong cluster token"
			if hello.Token == "" {
				reason = "missing cluster token"
			}
			sc.refuse(Unauthenticated, reason, "handshake refused")
			return false
		}
	}
	sc.peer = Limits{MaxMessage: hello.MaxMessage, MaxPayload: hello.MaxPayload}.withDefaults()
	lim := sc.s.opts.Limits
	ack, _ := marshal(&helloAckMsg{MaxMessage: lim.MaxMessage, MaxPayload: lim.MaxPayload})
	if err := sc.w.enqueue(newOutFrame(Header{Kind: KindHelloAck}, ack, nil, false)); err != nil {
		return false
	}
	sc.setReadDeadline(time.Time{})
	return true
}

// isProtocolError reports whether a read error means the peer sent bytes
// that are not our protocol (as opposed to the connection ending).
func isProtocolError(err error) bool {
	for _, e := range []error{ErrBadMagic, ErrBadVersion, ErrBadChecksum, ErrBadKind, ErrFrameTooLarge, ErrTruncated} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// readFailed logs why the read side ended and closes the connection,
// telling the peer why when it broke the protocol.
func (sc *serverConn) readFailed(err error) {
	switch {
	case errors.Is(err, errFrameDeadline):
		sc.s.metrics.refuse("frame_deadline")
		sc.refuse(DeadlineExceeded, err.Error(), "frame deadline passed")
	case errors.Is(err, errIdle):
		sc.s.log.Debug("idle connection closed", "remote", sc.remote, "reason", err)
	case errors.Is(err, ErrFrameTooLarge):
		sc.refuse(ResourceExhausted, err.Error(), "oversized frame")
	case errors.Is(err, ErrTruncated):
		sc.s.log.Warn("truncated frame; closing connection", "remote", sc.remote, "err", err)
	case isProtocolError(err):
		sc.refuse(InvalidArgument, err.Error(), "corrupt frame")
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		sc.s.log.Debug("connection closed", "remote", sc.remote)
	default:
		sc.s.log.Debug("read failed; closing connection", "remote", sc.remote, "err", err)
	}
}

// refuse sends an error frame, logs the reason and closes the connection.
// It lingers briefly so the frame is not lost to a reset caused by unread
// input.
func (sc *serverConn) refuse(code Code, msg, what string) {
	sc.s.log.Warn(what+"; closing connection", "remote", sc.remote, "code", code.String(), "reason", msg)
	if sc.w.enqueue(newOutFrame(Header{Kind: KindError, Code: code}, encodeError(msg), nil, false)) == nil {
		sc.w.stop(true, errors.New(msg))
		select {
		case <-sc.w.stopped:
		case <-time.After(time.Second):
		}
	}
	if tc, ok := sc.conn.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
		_ = sc.conn.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
		_, _ = io.CopyN(io.Discard, sc.fr.br, 1<<20)
	}
	sc.close(errors.New(msg))
}

// dispatch starts the handler for a request, or answers Unimplemented. It
// blocks while MaxConcurrentPerConn handlers run, and returns false if the
// connection closed meanwhile or the client broke the protocol. The
// request's charge to the budget is released when its call is done, or at
// once if it does not run.
func (sc *serverConn) dispatch(f inFrame) bool {
	h := sc.s.lookup(f.Method)
	if h == nil {
		sc.s.budget.release(f.charge)
		sc.s.log.Debug("unknown method", "remote", sc.remote, "method", f.Method.String())
		sc.respond(f.ID, f.Method, nil, nil, NewError(Unimplemented, "unknown method "+f.Method.String()), nil)
		return true
	}
	// Small messages are decoded here, on the reader's long-lived (and so
	// already grown) stack: the CBOR decoder recurses deeply, and on a
	// fresh handler goroutine the stack growth costs more than the decode.
	var req any
	if len(f.Msg) <= inlineDecode {
		var err error
		if req, err = h.decode(f.Msg); err != nil {
			sc.s.budget.release(f.charge)
			sc.respond(f.ID, f.Method, nil, nil, err, nil)
			return true
		}
	}
	select {
	case sc.sem <- struct{}{}:
	case <-sc.closing:
		sc.s.budget.release(f.charge)
		return false
	}
	// Contexts hang off Background, not off a per-connection parent, so that
	// concurrent requests do not contend on one parent's child list; closing
	// the connection cancels them through the inflight map.
	var ctx context.Context
	var cancel context.CancelFunc
	if f.Timeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), time.Duration(f.Timeout)*time.Millisecond)
	} else {
		ctx, cancel = context.WithCancel(context.Background())
	}
	if f.Flags&FlagRelaxed != 0 {
		ctx = durability.Relaxed(ctx)
	}
	call := &serverCall{cancel: cancel}

	sc.mu.Lock()
	_, dup := sc.inflight[f.ID]
	open := sc.inflight != nil
	if open && !dup {
		sc.inflight[f.ID] = call
		sc.handlers.Add(1)
	}
	sc.mu.Unlock()
	if !open || dup {
		sc.s.budget.release(f.charge)
		cancel()
		<-sc.sem
		if dup {
			sc.refuse(InvalidArgument, fmt.Sprintf("request id %d reused while in flight", f.ID), "protocol violation")
		}
		return false
	}
	go sc.run(ctx, call, h, f, req)
	return true
}

// run executes one handler and sends its response.
func (sc *serverConn) run(ctx context.Context, call *serverCall, h *handler, f inFrame, req any) {
	defer sc.handlers.Done()
	if h.deep {
		growStack()
	}
	var start time.Time
	if sc.s.metrics != nil {
		start = time.Now()
	}
	msg, payload, err := sc.invoke(ctx, h, f, req)

	sc.mu.Lock()
	if sc.inflight != nil {
		delete(sc.inflight, f.ID)
	}
	sc.mu.Unlock()
	call.cancel()
	canceled := call.canceled.Load()

	// A borrowed request payload goes back to the pool once nothing can
	// reference it: after the response (which may be that very payload) is
	// written, or now if no response goes out. The request's bytes count
	// against the budget until then too, borrowed or not: the response may
	// be the request's payload.
	var done func()
	if borrowed, pooled := h.borrow && f.Payload != nil, h.pooled && payload != nil; borrowed || pooled || f.charge != 0 {
		in, out, charge := f.Payload, payload, f.charge
		done = func() {
			if pooled {
				ReleasePayload(out)
			}
			if borrowed {
				ReleasePayload(in)
			}
			sc.s.budget.release(charge)
		}
	}
	if canceled {
		err = NewError(Canceled, "canceled by the caller")
	} else if err == nil && (uint64(len(msg)) > uint64(sc.peer.MaxMessage) || uint64(len(payload)) > uint64(sc.peer.MaxPayload)) {
		err = Errorf(ResourceExhausted, "%s: response of %d+%d bytes exceeds the client's limits %d+%d",
			f.Method, len(msg), len(payload), sc.peer.MaxMessage, sc.peer.MaxPayload)
		msg, payload = nil, nil
	}
	// Count the call before answering, so a caller that saw the answer sees
	// the count too.
	if sc.s.metrics != nil {
		sc.s.metrics.observe(f.Method, CodeOf(err), time.Since(start))
	}
	if canceled {
		// The caller has stopped waiting; a response would be discarded.
		if done != nil {
			done()
		}
	} else {
		sc.respond(f.ID, f.Method, msg, payload, err, done)
	}
	<-sc.sem
}

// invoke decodes the request unless dispatch did, and calls the handler,
// turning a panic into an Internal error.
func (sc *serverConn) invoke(ctx context.Context, h *handler, f inFrame, req any) (msg, payload []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			sc.s.log.Error("handler panicked", "remote", sc.remote, "method", f.Method.String(), "panic", r, "stack", string(debug.Stack()))
			msg, payload, err = nil, nil, Errorf(Internal, "%s: handler panicked: %v", f.Method, r)
		}
	}()
	if req == nil {
		if req, err = h.decode(f.Msg); err != nil {
			return nil, nil, err
		}
	}
	return h.call(ctx, req, f.Payload)
}

// respond queues a response: msg and payload on success, the error's code
// and text otherwise. done, if set, runs when the writer is done with it.
func (sc *serverConn) respond(id uint64, m Method, msg, payload []byte, err error, done func()) {
	h := Header{Kind: KindResponse, ID: id, Method: m}
	if err != nil {
		var text string
		h.Code, text = toWire(err)
		msg, payload = encodeError(text), nil
	}
	out := newOutFrame(h, msg, payload, false)
	out.onDone = done
	if qerr := sc.w.enqueue(out); qerr != nil {
		// Never queued, so nothing references the payload. (A frame the
		// writer abandons when it stops has its done run by the writer.)
		if done != nil {
			done()
		}
		sc.s.log.Debug("response dropped: connection closed", "remote", sc.remote, "method", m.String())
	}
}

// cancel cancels a running request at the client's request. Unknown ids are
// ignored: the response and the cancel crossed.
func (sc *serverConn) cancel(id uint64) {
	sc.mu.Lock()
	call := sc.inflight[id]
	sc.mu.Unlock()
	if call != nil {
		call.canceled.Store(true)
		call.cancel()
	}
}

// goAway asks the client to move its new calls elsewhere.
func (sc *serverConn) goAway() {
	_ = sc.w.enqueue(newOutFrame(Header{Kind: KindGoAway}, nil, nil, false))
}

// close closes the connection and cancels every running handler. It is
// idempotent.
func (sc *serverConn) close(reason error) {
	sc.once.Do(func() {
		close(sc.closing)
		sc.w.stop(false, reason)
		sc.conn.Close()
		sc.mu.Lock()
		calls := sc.inflight
		sc.inflight = nil
		sc.mu.Unlock()
		for _, c := range calls {
			c.cancel()
		}
	})
}
