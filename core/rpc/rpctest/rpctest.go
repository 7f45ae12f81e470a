// Package rpctest tests and fuzzes rpc servers from outside, as a peer
// would: Conn sends request frames carrying any message and payload bytes
// (not only what rpc.Call can encode), PanicWatch is a log handler that
// notices every panic a server recovered, and Fuzzer puts them together for
// the fuzz targets of the services' request handlers.
package rpctest

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/rpc"
	"github.com/fxamacker/cbor/v2"
)

// Reply is a server's answer to one request frame.
type Reply struct {
	Code    rpc.Code
	Msg     []byte // the response message (Code OK)
	Payload []byte
	Message string // the error text (Code not OK)
}

// Err returns the reply as the error rpc.Call would return, or nil.
func (r Reply) Err() error {
	if r.Code == rpc.OK {
		return nil
	}
	return rpc.NewError(r.Code, r.Message)
}

// Conn is one raw connection to an rpc server. Calls on it run one at a
// time.
type Conn struct {
	c    net.Conn
	br   *bufio.Reader
	peer rpc.Limits // the server's receive limits, from its hello-ack
	next uint64
	err  error // the connection is unusable
}

// These mirror the rpc package's handshake and error messages (codec.go),
// which are part of the wire format.
type helloMsg struct {
	Token      string `cbor:"1,keyasint,omitempty"`
	MaxMessage uint32 `cbor:"2,keyasint,omitempty"`
	MaxPayload uint32 `cbor:"3,keyasint,omitempty"`
}

type helloAckMsg struct {
	MaxMessage uint32 `cbor:"1,keyasint,omitempty"`
	MaxPayload uint32 `cbor:"2,keyasint,omitempty"`
}

type errorMsg struct {
	Message string `cbor:"1,keyasint,omitempty"`
}

// decMode decodes as the rpc package does: default options, which ignore
// unknown fields and bound nesting and sizes.
var decMode = func() cbor.DecMode {
	m, err := cbor.DecOptions{}.DecMode()
	if err != nil {
		panic(err)
	}
	return m
}()

// Dial connects to addr and completes the handshake with token, within
// timeout (10 s if not positive).
func Dial(addr, token string, timeout time.Duration) (*Conn, error) {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	conn := &Conn{c: c, br: bufio.NewReader(c)}
	if err := conn.handshake(token, timeout); err != nil {
		c.Close()
		return nil, err
	}
	return conn, nil
}

func (c *Conn) handshake(token string, timeout time.Duration) error {
	_ = c.c.SetDeadline(time.Now().Add(timeout))
	defer c.c.SetDeadline(time.Time{})
	hello, err := cbor.Marshal(&helloMsg{Token: token, MaxMessage: rpc.DefaultMaxMessage, MaxPayload: rpc.DefaultMaxPayload})
	if err != nil {
		return err
	}
	if err := rpc.WriteFrame(c.c, rpc.Header{Kind: rpc.KindHello}, hello, nil); err != nil {
		return fmt.Errorf("rpctest: send hello: %w", err)
	}
	f, err := rpc.ReadFrame(c.br, rpc.Limits{})
	if err != nil {
		return fmt.Errorf("rpctest: read hello-ack: %w", err)
	}
	switch f.Kind {
	case rpc.KindHelloAck:
	case rpc.KindError:
		return rpc.NewError(f.Code, errorText(f.Msg))
	default:
		return fmt.Errorf("rpctest: %s frame instead of hello-ack", f.Kind)
	}
	var ack helloAckMsg
	if err := decMode.Unmarshal(f.Msg, &ack); err != nil && len(f.Msg) > 0 {
		return fmt.Errorf("rpctest: hello-ack: %w", err)
	}
	c.peer = rpc.Limits{MaxMessage: ack.MaxMessage, MaxPayload: ack.MaxPayload}
	if c.peer.MaxMessage == 0 {
		c.peer.MaxMessage = rpc.DefaultMaxMessage
	}
	if c.peer.MaxPayload == 0 {
		c.peer.MaxPayload = rpc.DefaultMaxPayload
	}
	return nil
}

func errorText(b []byte) string {
	var m errorMsg
	if len(b) > 0 && decMode.Unmarshal(b, &m) != nil {
		return "undecodable error message"
	}
	return m.Message
}

// Limits returns the server's receive limits.
func (c *Conn) Limits() rpc.Limits { return c.peer }

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Broken reports why the connection cannot carry calls any more, or nil.
func (c *Conn) Broken() error { return c.err }

// Call sends one request frame with msg as its encoded message and payload
// beside it, with timeout as the frame's time budget, and waits for the
// response (at most timeout plus a few seconds; timeout 0 means 10 s). A returned error means the
// exchange failed (the server closed the connection, sent an error frame,
// did not answer); the connection is then unusable. An answer with an error
// code is a Reply, not an error.
func (c *Conn) Call(method rpc.Method, msg, payload []byte, timeout time.Duration) (Reply, error) {
	if c.err != nil {
		return Reply{}, c.err
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if uint64(len(msg)) > uint64(c.peer.MaxMessage) || uint64(len(payload)) > uint64(c.peer.MaxPayload) {
		return Reply{}, fmt.Errorf("rpctest: request of %d+%d bytes exceeds the server's limits %d+%d",
			len(msg), len(payload), c.peer.MaxMessage, c.peer.MaxPayload)
	}
	r, err := c.call(method, msg, payload, timeout)
	if err != nil {
		c.err = err
		c.c.Close()
	}
	return r, err
}

func (c *Conn) call(method rpc.Method, msg, payload []byte, timeout time.Duration) (Reply, error) {
	c.next++
	id := c.next
	_ = c.c.SetDeadline(time.Now().Add(timeout + 5*time.Second))
	defer c.c.SetDeadline(time.Time{})
	ms := uint32(timeout / time.Millisecond)
	if err := rpc.WriteFrame(c.c, rpc.Header{Kind: rpc.KindRequest, ID: id, Method: method, Timeout: ms}, msg, payload); err != nil {
		return Reply{}, fmt.Errorf("rpctest: send %s: %w", method, err)
	}
	for {
		f, err := rpc.ReadFrame(c.br, rpc.Limits{})
		if err != nil {
			return Reply{}, fmt.Errorf("rpctest: %s: read response: %w", method, err)
		}
		switch f.Kind {
		case rpc.KindGoAway:
			continue
		case rpc.KindError:
			return Reply{}, fmt.Errorf("rpctest: %s: the server closed the connection: %w", method, rpc.NewError(f.Code, errorText(f.Msg)))
		case rpc.KindResponse:
		default:
			return Reply{}, fmt.Errorf("rpctest: %s: unexpected %s frame", method, f.Kind)
		}
		if f.ID != id || f.Method != method {
			return Reply{}, fmt.Errorf("rpctest: %s: response for request %d method %s, want %d", method, f.ID, f.Method, id)
		}
		if f.Code != rpc.OK {
			if f.PayloadLen != 0 {
				return Reply{}, fmt.Errorf("rpctest: %s: error response %s with a payload of %d bytes", method, f.Code, f.PayloadLen)
			}
			return Reply{Code: f.Code, Message: errorText(f.Msg)}, nil
		}
		return Reply{Msg: f.Msg, Payload: f.Payload}, nil
	}
}

// PanicWatch records the panics an rpc server logged as recovered (a
// handler's, or one serving a connection). Give its Handler to the server
// as (or under) rpc.Options.Logger. Everything else is dropped.
type PanicWatch struct {
	mu     sync.Mutex
	panics []string
}

// Handler returns a slog.Handler that feeds w.
func (w *PanicWatch) Handler() slog.Handler { return watchHandler{w: w} }

// Logger returns a logger over Handler.
func (w *PanicWatch) Logger() *slog.Logger { return slog.New(w.Handler()) }

// Take returns the panics recorded since the last Take.
func (w *PanicWatch) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.panics
	w.panics = nil
	return p
}

type watchHandler struct {
	w     *PanicWatch
	attrs []slog.Attr
}

func (h watchHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }

func (h watchHandler) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "panic") {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, "\n%s: %s", a.Key, a.Value)
		return true
	})
	h.w.mu.Lock()
	h.w.panics = append(h.w.panics, b.String())
	h.w.mu.Unlock()
	return nil
}

func (h watchHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return watchHandler{w: h.w, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h watchHandler) WithGroup(string) slog.Handler { return h }

// Method is a method a fuzz target calls, with its request type.
type Method struct {
	ID rpc.Method
	// decodes reports whether a message decodes as the request type, as the
	// server will decode it.
	decodes func(msg []byte) bool
}

// M describes method id, whose requests are Req.
func M[Req any](id rpc.Method) Method {
	return Method{ID: id, decodes: func(msg []byte) bool {
		if len(msg) == 0 {
			return true
		}
		return decMode.Unmarshal(msg, new(Req)) == nil
	}}
}

// Fuzzer sends fuzz inputs to one server over one connection (redialed if
// the server closes it) and checks every answer.
type Fuzzer struct {
	Addr, Token string
	// Watches are the panic logs of the servers the calls reach (the one
	// at Addr and any it calls in turn).
	Watches []*PanicWatch
	// Timeout is each call's time budget; default 10 s.
	Timeout time.Duration
	// Internal lists the substrings of the Internal errors an input may
	// rightly cause; any other Internal answer fails the input, since it
	// means an invariant broke or bad input was not refused as such.
	Internal []string

	conn *Conn
}

// Call sends msg and payload to m and fails t if a server panicked, the
// answer is not a well-formed response, a message that does not decode as
// m's request was not refused with InvalidArgument, or the answer is
// Internal (see Fuzzer.Internal).
func (fz *Fuzzer) Call(t testing.TB, m Method, msg, payload []byte) Reply {
	t.Helper()
	timeout := fz.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if fz.conn == nil || fz.conn.Broken() != nil {
		c, err := Dial(fz.Addr, fz.Token, 5*time.Second)
		if err != nil {
			t.Fatalf("dial %s: %v", fz.Addr, err)
		}
		fz.conn = c
	}
	r, err := fz.conn.Call(m.ID, msg, payload, timeout)
	fz.checkPanics(t, m)
	if err != nil {
		t.Fatalf("%s: %v", m.ID, err)
	}
	if r.Code == rpc.Internal && strings.Contains(r.Message, "panicked") {
		t.Fatalf("%s: %s", m.ID, r.Message)
	}
	if r.Code == rpc.OK && len(r.Msg) > 0 {
		if err := cbor.Wellformed(r.Msg); err != nil {
			t.Fatalf("%s: response message is not CBOR: %v", m.ID, err)
		}
	}
	if m.decodes != nil && !m.decodes(msg) && r.Code != rpc.InvalidArgument {
		t.Fatalf("%s: a message that does not decode got %s %q, want InvalidArgument", m.ID, r.Code, r.Message)
	}
	if r.Code == rpc.Internal && !fz.internalOK(r.Message) {
		t.Fatalf("%s: Internal error for this input: %s", m.ID, r.Message)
	}
	if r.Code == rpc.Unimplemented {
		t.Fatalf("%s: not registered: %s", m.ID, r.Message)
	}
	return r
}

func (fz *Fuzzer) internalOK(msg string) bool {
	for _, s := range fz.Internal {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// checkPanics fails t with every panic the watches recorded.
func (fz *Fuzzer) checkPanics(t testing.TB, m Method) {
	t.Helper()
	var all []string
	for _, w := range fz.Watches {
		all = append(all, w.Take()...)
	}
	if len(all) > 0 {
		t.Fatalf("%s: a server panicked:\n%s", m.ID, strings.Join(all, "\n---\n"))
	}
}

// Healthy calls m with msg and fails t unless it succeeds: the server
// still serves a well-formed call.
func (fz *Fuzzer) Healthy(t testing.TB, m Method, msg []byte) Reply {
	t.Helper()
	r := fz.Call(t, m, msg, nil)
	if r.Code != rpc.OK {
		t.Fatalf("well-formed %s after the input: %s %q", m.ID, r.Code, r.Message)
	}
	return r
}

// Close closes the connection.
func (fz *Fuzzer) Close() {
	if fz.conn != nil {
		fz.conn.Close()
	}
}
