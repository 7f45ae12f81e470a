package rpc

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"runtime/debug"
	"sync"
	"time"
	"unsafe"

	"github.com/flyfs/flyfs/core/durability"
)

// The in-process path. When a client and a server live in one process (flyfs
// server runs every role in one) and both set Options.Local, a call to the
// server's listening address skips the socket: no frames are written or
// read, no goroutine hands the call on (the handler runs on the caller's),
// and a pooled
// response payload (a chunk read) reaches the caller without a copy, or is
// built in memory the caller offered (replyinto.go). The
// call keeps the socket path's contract: the request message is encoded and
// decoded (the handler never shares the caller's structs), the request
// payload is the caller's again once Call returns (a handler that may keep
// it gets a copy; one that borrows it reads the caller's bytes), the token,
// method lookup, size limits, deadline, cancellation, panic recovery,
// metrics and error codes are the same, and a closed server answers
// Unavailable. The address is what selects it, so a client reaches a
// server of its own process this way and any other over TCP.

// localServers maps a listening address to the Local server serving on it.
var localServers sync.Map // string → *Server

// serveLocal makes s reachable in-process at addr until unserveLocal.
func (s *Server) serveLocal(addr string) {
	if s.opts.Local {
		localServers.Store(addr, s)
	}
}

func (s *Server) unserveLocal(addr string) {
	localServers.CompareAndDelete(addr, s)
}

// localServer returns the Local server of this process at addr, or nil.
func (c *Client) localServer(addr string) *Server {
	if !c.opts.Local {
		return nil
	}
	v, ok := localServers.Load(addr)
	if !ok {
		return nil
	}
	return v.(*Server)
}

// localResult is what a handler run for a local call produced.
type localResult struct {
	resp    any
	payload []byte
	err     error
}

// callLocal runs one call on s in this process; see the comment at the top.
func (s *Server) callLocal(ctx context.Context, c *Client, method Method, msg, payload []byte, decode func([]byte) error) ([]byte, error) {
	if ctx.Err() != nil {
		return nil, contextError(ctx, method)
	}
	if want := s.opts.Token; want != "" {
		got, exp := sha256.Sum256([]byte(c.opts.Token)), sha256.Sum256([]byte(want))
		if subtle.ConstantTimeCompare(got[:], exp[:]) != 1 {
			reason := "wrong cluster token"
			if c.opts.Token == "" {
				reason = "missing cluster token"
			}
			return nil, &Error{Code: Unauthenticated, Message: "server refused connection: " + reason}
		}
	}
	if lim := s.opts.Limits; uint64(len(msg)) > uint64(lim.MaxMessage) || uint64(len(payload)) > uint64(lim.MaxPayload) {
		return nil, Errorf(ResourceExhausted, "%s: request of %d+%d bytes exceeds the server's limits %d+%d",
			method, len(msg), len(payload), lim.MaxMessage, lim.MaxPayload)
	}
	h := s.lookup(method)
	if h == nil {
		return nil, wireError(NewError(Unimplemented, "unknown method "+method.String()))
	}
	// Held against MaxInflightBytes like a request read off a socket, until
	// the handler is done with it.
	charge := int64(len(msg) + len(payload))
	if ok, used := s.budget.reserve(charge); !ok {
		return nil, wireError(Errorf(ResourceExhausted,
			"%s: request of %d bytes refused: the server holds %d bytes of requests in flight, its limit is %d (MaxInflightBytes); retry later",
			method, charge, used, s.budget.max))
	}
	// Decoded here, on the caller's grown stack, for the reason dispatch
	// decodes on the reader's.
	req, err := decodeLocal(h, method, msg)
	if err != nil {
		s.budget.release(charge)
		return nil, wireError(err)
	}
	// The handler runs on the caller's goroutine: handed to a goroutine of
	// its own, every call paid for waking a thread and switching to it, and
	// back (tens of microseconds on a busy machine, more than most handlers
	// take). Its context ends with the caller's and at Close, so a handler
	// that heeds its context ends the call within the caller's deadline.
	hctx, cancel := context.WithCancel(ctx)
	if durability.IsRelaxed(ctx) {
		hctx = durability.InProcess(hctx) // a crash of this process ends the caller too
	}
	id, ok := s.startLocal(cancel)
	if !ok {
		cancel()
		s.budget.release(charge)
		return nil, unavailable(ErrServerClosed, "%s: no working connection", method)
	}
	// A borrowing handler reads the caller's bytes where they lie: it
	// neither keeps nor changes them, and it has returned before Call does.
	// Any other gets a copy it may keep.
	in := payload
	if payload != nil && !h.borrow {
		in = append([]byte(nil), payload...)
	}
	r := s.runLocal(hctx, c, h, method, req, in, charge)
	cancel()
	s.localDone(id)
	if r.err != nil {
		select {
		case <-s.localStop:
			// As a closed connection fails its calls, whatever the handler
			// (canceled by Close) made of it.
			return nil, unavailable(ErrServerClosed, "%s: connection closed", method)
		default:
		}
		if ctx.Err() != nil {
			return nil, contextError(ctx, method)
		}
		return nil, wireError(r.err)
	}
	// Encoded here, on the caller's stack, like the request.
	msg, err = encodeLocal(h, method, r.resp)
	if err != nil {
		return nil, wireError(err)
	}
	if lim := c.opts.Limits; uint64(len(msg)) > uint64(lim.MaxMessage) || uint64(len(r.payload)) > uint64(lim.MaxPayload) {
		return nil, wireError(Errorf(ResourceExhausted, "%s: response of %d+%d bytes exceeds the client's limits %d+%d",
			method, len(msg), len(r.payload), lim.MaxMessage, lim.MaxPayload))
	}
	if err := decode(msg); err != nil {
		return nil, Errorf(Internal, "%s: %v", method, err)
	}
	return r.payload, nil
}

// runLocal runs the handler of a local call and gives back what the call
// held against the server's budget.
func (s *Server) runLocal(ctx context.Context, c *Client, h *handler, method Method, req any, in []byte, charge int64) localResult {
	if h.deep {
		growStack()
	}
	var start time.Time
	if s.metrics != nil {
		start = time.Now()
	}
	resp, out, err := s.invokeLocal(ctx, h, method, req, in)
	if lim := c.opts.Limits; err == nil && uint64(len(out)) > uint64(lim.MaxPayload) {
		// Refused here, so the server's metrics count it as over TCP;
		// the message is encoded only to say its size.
		msg, _ := encodeLocal(h, method, resp)
		err = Errorf(ResourceExhausted, "%s: response of %d+%d bytes exceeds the client's limits %d+%d",
			method, len(msg), len(out), lim.MaxMessage, lim.MaxPayload)
		resp, out = nil, nil
	}
	if s.metrics != nil {
		s.metrics.observe(method, CodeOf(err), time.Since(start))
	}
	out = handOver(h, in, out)
	s.budget.release(charge)
	return localResult{resp, out, err}
}

// handOver makes a handler's response payload the caller's: a pooled one is
// the caller's as it is (nothing else holds it), any other is copied, since
// the handler may keep reading it while the caller may write it, and so is
// one that lies in a borrowed request payload, the caller's own buffer.
func handOver(h *handler, in, out []byte) []byte {
	switch {
	case out == nil:
		return nil
	case h.borrow && overlaps(in, out):
		return append([]byte(nil), out...) // the caller's own buffer
	case h.pooled:
		return out
	}
	return append([]byte(nil), out...)
}

// overlaps reports whether b lies in a's backing array.
func overlaps(a, b []byte) bool {
	if cap(a) == 0 || cap(b) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(a[:cap(a)])))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p < lo+uintptr(cap(a))
}

// decodeLocal decodes a request message, a panic of the decoder an error.
func decodeLocal(h *handler, method Method, msg []byte) (req any, err error) {
	defer func() {
		if r := recover(); r != nil {
			req, err = nil, Errorf(Internal, "%s: decode request: %v", method, r)
		}
	}()
	return h.decode(msg)
}

// encodeLocal encodes a response message, a panic of the encoder an error.
func encodeLocal(h *handler, method Method, resp any) (msg []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, err = nil, Errorf(Internal, "%s: encode response: %v", method, r)
		}
	}()
	return h.encode(resp)
}

// invokeLocal runs the handler, turning a panic into an Internal error.
func (s *Server) invokeLocal(ctx context.Context, h *handler, method Method, req any, payload []byte) (resp any, out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("handler panicked", "remote", "local", "method", method.String(), "panic", r, "stack", string(debug.Stack()))
			resp, out, err = nil, nil, Errorf(Internal, "%s: handler panicked: %v", method, r)
		}
	}()
	return h.run(ctx, req, payload)
}

// wireError is err as the caller of a remote call would see it: the code and
// text that travel, decoded the way the client decodes them.
func wireError(err error) error {
	code, text := toWire(err)
	return decodeError(code, encodeError(text))
}

// startLocal counts a local call in, unless the server is closed; Close
// cancels the calls counted in and waits for them.
func (s *Server) startLocal(cancel context.CancelFunc) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, false
	}
	if s.localCalls == nil {
		s.localCalls = make(map[uint64]context.CancelFunc)
	}
	s.localSeq++
	s.localCalls[s.localSeq] = cancel
	s.localWG.Add(1)
	return s.localSeq, true
}

func (s *Server) localDone(id uint64) {
	s.mu.Lock()
	delete(s.localCalls, id)
	s.mu.Unlock()
	s.localWG.Done()
}

// stopLocal cancels the running local calls and waits for them.
func (s *Server) stopLocal() {
	s.mu.Lock()
	calls := s.localCalls
	s.localCalls = nil
	s.mu.Unlock()
	s.localStopOnce.Do(func() { close(s.localStop) })
	for _, cancel := range calls {
		cancel()
	}
	s.localWG.Wait()
}
