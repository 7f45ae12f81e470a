package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/rpc"
)

type echoReq struct {
	Text string `cbor:"1,keyasint,omitempty"`
	Fail string `cbor:"2,keyasint,omitempty"` // how the failing handler fails
}

type echoResp struct {
	Text       string `cbor:"1,keyasint,omitempty"`
	PayloadLen int    `cbor:"2,keyasint,omitempty"`
	Lent       bool   `cbor:"3,keyasint,omitempty"` // the handler read the caller's own buffer
}

const (
	methodEcho  rpc.Method = 0xf001 // echoes text and payload
	methodBlock rpc.Method = 0xf002 // waits for its context to end
	methodFail  rpc.Method = 0xf003 // fails as req.Fail says
	methodNone  rpc.Method = 0xf0ff // never registered
)

func init() {
	rpc.RegisterMethod(methodEcho, "test.Echo")
	rpc.RegisterMethod(methodBlock, "test.Block")
	rpc.RegisterMethod(methodFail, "test.Fail")
}

// blockEvents reports what the block handler saw.
type blockEvents struct {
	started chan struct{}
	ended   chan error // ctx.Err() when the handler's context ended
}

func newBlockEvents() *blockEvents {
	return &blockEvents{started: make(chan struct{}, 16), ended: make(chan error, 16)}
}

func echo(_ context.Context, req *echoReq, payload []byte) (*echoResp, []byte, error) {
	return &echoResp{Text: req.Text, PayloadLen: len(payload)}, payload, nil
}

func registerTestMethods(s *rpc.Server, ev *blockEvents) {
	rpc.Handle(s, methodEcho, echo)
	rpc.Handle(s, methodBlock, func(ctx context.Context, _ *echoReq, _ []byte) (*echoResp, []byte, error) {
		select { // never block: some tests do not listen
		case ev.started <- struct{}{}:
		default:
		}
		<-ctx.Done()
		select {
		case ev.ended <- ctx.Err():
		default:
		}
		return nil, nil, ctx.Err()
	})
	rpc.Handle(s, methodFail, func(ctx context.Context, req *echoReq, _ []byte) (*echoResp, []byte, error) {
		switch req.Fail {
		case "notfound":
			return nil, nil, rpc.Errorf(rpc.NotFound, "inode %d", 42)
		case "wrapped":
			return nil, nil, fmt.Errorf("create /a: %w", rpc.NewError(rpc.AlreadyExists, "dentry exists"))
		case "service":
			return nil, nil, rpc.NewError(codeChunkStale, "chunk version 3 < 4")
		case "plain":
			return nil, nil, errors.New("disk on fire")
		case "panic":
			panic("handler bug")
		case "deadline":
			return nil, nil, fmt.Errorf("waiting for lock: %w", context.DeadlineExceeded)
		}
		return &echoResp{Text: "ok"}, []byte("should not matter"), nil
	})
}

type testServer struct {
	srv  *rpc.Server
	addr string
	ev   *blockEvents
	logs *logBuffer
	done chan error
}

func startServer(t testing.TB, opts rpc.Options) *testServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, l, opts)
}

func startServerOn(t testing.TB, l net.Listener, opts rpc.Options) *testServer {
	t.Helper()
	ts := &testServer{addr: l.Addr().String(), ev: newBlockEvents(), logs: &logBuffer{}, done: make(chan error, 1)}
	if opts.Logger == nil {
		opts.Logger = ts.logs.logger()
	}
	ts.srv = rpc.NewServer(opts)
	registerTestMethods(ts.srv, ts.ev)
	go func() { ts.done <- ts.srv.Serve(l) }()
	t.Cleanup(func() { ts.srv.Close() })
	return ts
}

func newClient(t testing.TB, opts rpc.Options) *rpc.Client {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = (&logBuffer{}).logger()
	}
	c := rpc.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func callEcho(ctx context.Context, c *rpc.Client, addr, text string, payload []byte) (*echoResp, []byte, error) {
	return rpc.Call[echoReq, echoResp](ctx, c, addr, methodEcho, &echoReq{Text: text}, payload)
}

// mustServe asserts that a fresh, well-behaved client gets answers.
func mustServe(t *testing.T, ts *testServer, opts rpc.Options) {
	t.Helper()
	c := newClient(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, _, err := callEcho(ctx, c, ts.addr, "still there?", nil)
	if err != nil || resp.Text != "still there?" {
		t.Fatalf("server no longer serves a good client: resp %+v, err %v", resp, err)
	}
}

func testPayload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	ts := startServer(t, rpc.Options{Token: "secret"})
	c := newClient(t, rpc.Options{Token: "secret"})
	tests := []struct {
		name string
		text string
		size int
	}{
		{"no payload", "hello", 0},
		{"empty request", "", 0},
		{"small payload", "small", 100},
		{"payload just above inline size", "medium", 16<<10 + 1},
		{"4 MiB payload", "big", 4 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload := testPayload(tt.size)
			resp, got, err := callEcho(context.Background(), c, ts.addr, tt.text, payload)
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if resp.Text != tt.text || resp.PayloadLen != tt.size {
				t.Errorf("response = %+v, want text %q and payload length %d", resp, tt.text, tt.size)
			}
			if !bytes.Equal(got, payload) {
				t.Errorf("echoed payload differs: got %d bytes, want %d", len(got), len(payload))
			}
		})
	}
}

func TestNilRequestAndResponse(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	rpc.Handle(ts.srv, 0xf010, func(_ context.Context, req *echoReq, _ []byte) (*echoResp, []byte, error) {
		if req == nil {
			return nil, nil, errors.New("nil request")
		}
		return nil, nil, nil
	})
	c := newClient(t, rpc.Options{})
	resp, payload, err := rpc.Call[echoReq, echoResp](context.Background(), c, ts.addr, 0xf010, nil, nil)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if resp == nil || *resp != (echoResp{}) || payload != nil {
		t.Fatalf("got resp %+v payload %v, want zero response and nil payload", resp, payload)
	}
}

func TestConcurrentCalls(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	c := newClient(t, rpc.Options{})
	const n = 1000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("call %d", i)
			payload := testPayload(i % 3000)
			resp, got, err := callEcho(context.Background(), c, ts.addr, text, payload)
			switch {
			case err != nil:
				errs <- err
			case resp.Text != text || !bytes.Equal(got, payload):
				errs <- fmt.Errorf("call %d got response %q with %d payload bytes", i, resp.Text, len(got))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestDeadlineExceeded(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	c := newClient(t, rpc.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := rpc.Call[echoReq, echoResp](ctx, c, ts.addr, methodBlock, &echoReq{}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, rpc.ErrDeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded matching both context and rpc sentinels", err)
	}
	if rpc.CodeOf(err) != rpc.DeadlineExceeded {
		t.Errorf("CodeOf = %v", rpc.CodeOf(err))
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("call took %v with a 100ms deadline", el)
	}
	// The handler's context carries the deadline (or the cancel that
	// follows it); either way it ends.
	select {
	case err := <-ts.ev.ended:
		if err == nil {
			t.Error("handler context ended without error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler context never ended")
	}
}

func TestDeadlineReachesHandler(t *testing.T) {
	// The client's context has a deadline but the caller never cancels
	// explicitly; the handler must see DeadlineExceeded from the deadline
	// carried in the request, not just a cancel frame.
	ts := startServer(t, rpc.Options{})
	got := make(chan time.Duration, 1)
	rpc.Handle(ts.srv, 0xf011, func(ctx context.Context, _ *echoReq, _ []byte) (*echoResp, []byte, error) {
		dl, ok := ctx.Deadline()
		if !ok {
			got <- -1
		} else {
			got <- time.Until(dl)
		}
		return nil, nil, nil
	})
	c := newClient(t, rpc.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, _, err := rpc.Call[echoReq, echoResp](ctx, c, ts.addr, 0xf011, nil, nil); err != nil {
		t.Fatal(err)
	}
	if d := <-got; d <= 0 || d > 2*time.Second+time.Millisecond {
		t.Fatalf("handler deadline in %v, want within (0, 2s]", d)
	}
}

func TestCancellationReachesHandler(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	c := newClient(t, rpc.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := rpc.Call[echoReq, echoResp](ctx, c, ts.addr, methodBlock, &echoReq{}, testPayload(1<<20))
		errc <- err
	}()
	select {
	case <-ts.ev.started:
	case <-time.After(5 * time.Second):
		t.Fatal("handler never started")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) || rpc.CodeOf(err) != rpc.Canceled {
			t.Fatalf("Call err = %v, want Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Call did not return after cancel")
	}
	select {
	case err := <-ts.ev.ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler ctx ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancellation never reached the handler")
	}
	// The connection is still good.
	if _, _, err := callEcho(context.Background(), c, ts.addr, "after", nil); err != nil {
		t.Fatalf("call after cancel: %v", err)
	}
}

func TestErrorsSurviveTheWire(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	c := newClient(t, rpc.Options{})
	tests := []struct {
		fail     string
		code     rpc.Code
		sentinel error
		text     string // expected in the error text
	}{
		{"notfound", rpc.NotFound, rpc.ErrNotFound, "inode 42"},
		{"wrapped", rpc.AlreadyExists, rpc.ErrAlreadyExists, "create /a"},
		{"service", codeChunkStale, &rpc.Error{Code: codeChunkStale}, "chunk version 3 < 4"},
		{"plain", rpc.Unknown, rpc.ErrUnknown, "disk on fire"},
		{"panic", rpc.Internal, rpc.ErrInternal, "handler bug"},
		{"deadline", rpc.DeadlineExceeded, context.DeadlineExceeded, "waiting for lock"},
	}
	for _, tt := range tests {
		t.Run(tt.fail, func(t *testing.T) {
			resp, payload, err := rpc.Call[echoReq, echoResp](context.Background(), c, ts.addr, methodFail, &echoReq{Fail: tt.fail}, nil)
			if resp != nil || payload != nil {
				t.Errorf("failed call returned resp %+v payload %q", resp, payload)
			}
			var e *rpc.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *rpc.Error", err, err)
			}
			if e.Code != tt.code || rpc.CodeOf(err) != tt.code {
				t.Errorf("code = %v, want %v", e.Code, tt.code)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.sentinel)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error text %q does not mention %q", err.Error(), tt.text)
			}
		})
	}
	if !strings.Contains(ts.logs.String(), "handler panicked") {
		t.Error("handler panic was not logged")
	}
}

func TestUnknownMethod(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	var dials atomic.Int32
	c := newClient(t, rpc.Options{ConnsPerAddr: 1, Dial: func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}})
	_, _, err := rpc.Call[echoReq, echoResp](context.Background(), c, ts.addr, methodNone, &echoReq{}, nil)
	if !errors.Is(err, rpc.ErrUnimplemented) {
		t.Fatalf("err = %v, want Unimplemented", err)
	}
	if !strings.Contains(err.Error(), "0xf0ff") {
		t.Errorf("error %q does not name the method", err)
	}
	if _, _, err := callEcho(context.Background(), c, ts.addr, "next", nil); err != nil {
		t.Fatalf("call after unknown method: %v", err)
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("client dialed %d times, want 1: the connection should stay open", n)
	}
}

func TestToken(t *testing.T) {
	ts := startServer(t, rpc.Options{Token: "right"})
	tests := []struct {
		name   string
		token  string
		reason string
	}{
		{"wrong token", "wrong", "wrong cluster token"},
		{"missing token", "", "missing cluster token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, rpc.Options{Token: tt.token})
			_, _, err := callEcho(context.Background(), c, ts.addr, "let me in", nil)
			if !errors.Is(err, rpc.ErrUnauthenticated) {
				t.Fatalf("err = %v, want Unauthenticated", err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("error %q does not say %q", err, tt.reason)
			}
			logs := ts.logs.String()
			if !strings.Contains(logs, tt.reason) || !strings.Contains(logs, "remote=127.0.0.1:") {
				t.Errorf("server log lacks reason %q or remote address:\n%s", tt.reason, logs)
			}
		})
	}
	mustServe(t, ts, rpc.Options{Token: "right"})
}

func TestNoTokenMeansNoAuth(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	mustServe(t, ts, rpc.Options{Token: "anything"})
}

// rawConn dials the server and performs the handshake by hand, to send what
// a real client never would.
func rawConn(t *testing.T, addr, token string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if token != "\x00skip" {
		hello := []byte{0xa1, 0x01, 0x60 + byte(len(token))} // {1: token} in CBOR
		hello = append(hello, token...)
		if err := rpc.WriteFrame(conn, rpc.Header{Kind: rpc.KindHello}, hello, nil); err != nil {
			t.Fatal(err)
		}
		f, err := rpc.ReadFrame(conn, rpc.Limits{})
		if err != nil || f.Kind != rpc.KindHelloAck {
			t.Fatalf("handshake: frame %v, err %v", f.Kind, err)
		}
	}
	return conn
}

// expectClosed reads from conn until the server closes it, returning the
// error frame it sent first, if any.
func expectClosed(t *testing.T, conn net.Conn) *rpc.Frame {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var errFrame *rpc.Frame
	for {
		f, err := rpc.ReadFrame(conn, rpc.Limits{})
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("server did not close the connection")
			}
			return errFrame
		}
		if f.Kind == rpc.KindError {
			errFrame = &f
		}
	}
}

func TestOversizedFrameClosesConnection(t *testing.T) {
	ts := startServer(t, rpc.Options{Limits: rpc.Limits{MaxPayload: 1 << 20}})
	conn := rawConn(t, ts.addr, "")
	var hdr [rpc.HeaderSize]byte
	h := rpc.Header{Kind: rpc.KindRequest, ID: 1, Method: methodEcho, PayloadLen: 2 << 20}
	h.Put(hdr[:])
	if _, err := conn.Write(hdr[:]); err != nil {
		t.Fatal(err)
	}
	f := expectClosed(t, conn)
	if f == nil || f.Code != rpc.ResourceExhausted {
		t.Fatalf("error frame before close = %+v, want code ResourceExhausted", f)
	}
	if !strings.Contains(ts.logs.String(), "oversized frame") {
		t.Errorf("server did not log the oversized frame:\n%s", ts.logs)
	}
	mustServe(t, ts, rpc.Options{})
}

func TestClientRefusesOversizedRequest(t *testing.T) {
	ts := startServer(t, rpc.Options{Limits: rpc.Limits{MaxPayload: 1 << 20}})
	c := newClient(t, rpc.Options{ConnsPerAddr: 1})
	_, _, err := callEcho(context.Background(), c, ts.addr, "too big", make([]byte, 1<<20+1))
	if !errors.Is(err, rpc.ErrResourceExhausted) {
		t.Fatalf("err = %v, want ResourceExhausted", err)
	}
	if _, _, err := callEcho(context.Background(), c, ts.addr, "fits", make([]byte, 1<<20)); err != nil {
		t.Fatalf("call within limits after refusal: %v", err)
	}
}

func TestBadInputClosesConnection(t *testing.T) {
	valid := func(h rpc.Header, msg, payload []byte) []byte {
		var b bytes.Buffer
		_ = rpc.WriteFrame(&b, h, msg, payload)
		return b.Bytes()
	}
	req := valid(rpc.Header{Kind: rpc.KindRequest, ID: 1, Method: methodEcho}, []byte{0xa0}, []byte("data"))
	block := valid(rpc.Header{Kind: rpc.KindRequest, ID: 7, Method: methodBlock}, nil, nil)
	corrupt := bytes.Clone(req)
	corrupt[10] ^= 0xff
	badKind := bytes.Clone(req)
	badKind[5] = 77
	binary := func(b []byte) []byte { // reseal the header checksum
		var h [rpc.HeaderSize]byte
		copy(h[:], b)
		c := crc32c(h[:36])
		b[36], b[37], b[38], b[39] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
		return b
	}
	tests := []struct {
		name      string
		handshake bool
		send      []byte
		halfClose bool // end the stream after sending
		wantLog   string
	}{
		{"garbage instead of hello", false, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n0123456789abcdef"), false, "handshake failed"},
		{"request before hello", false, req, false, "first frame must be hello"},
		{"garbage after hello", true, bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 20), false, "corrupt frame"},
		{"corrupt header checksum", true, corrupt, false, "checksum"},
		{"unknown frame kind", true, binary(badKind), false, "unknown frame kind"},
		{"response from client", true, valid(rpc.Header{Kind: rpc.KindResponse, ID: 1}, nil, nil), false, "unexpected response frame"},
		{"second hello", true, valid(rpc.Header{Kind: rpc.KindHello}, nil, nil), false, "unexpected hello frame"},
		{"request id reused while in flight", true, append(bytes.Clone(block), block...), false, "request id 7 reused"},
		{"truncated header", true, req[:17], true, "truncated frame"},
		{"truncated body", true, req[:len(req)-2], true, "truncated frame"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, rpc.Options{})
			token := "\x00skip"
			if tt.handshake {
				token = ""
			}
			conn := rawConn(t, ts.addr, token)
			if _, err := conn.Write(tt.send); err != nil {
				t.Fatal(err)
			}
			if tt.halfClose {
				_ = conn.(*net.TCPConn).CloseWrite()
			}
			expectClosed(t, conn)
			mustServe(t, ts, rpc.Options{})
			if logs := ts.logs.String(); !strings.Contains(logs, tt.wantLog) {
				t.Errorf("server log lacks %q:\n%s", tt.wantLog, logs)
			}
		})
	}
}

func TestRedialAfterServerRestart(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	addr := ts.addr
	var dials atomic.Int32
	c := newClient(t, rpc.Options{DialTimeout: time.Second, Dial: func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}})
	if _, _, err := callEcho(context.Background(), c, addr, "one", nil); err != nil {
		t.Fatal(err)
	}
	ts.srv.Close()

	_, _, err := callEcho(context.Background(), c, addr, "down", nil)
	if !errors.Is(err, rpc.ErrUnavailable) {
		t.Fatalf("call to a stopped server: err = %v, want Unavailable", err)
	}

	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("relisten on %s: %v", addr, err)
	}
	startServerOn(t, l, rpc.Options{})
	before := dials.Load()
	for i := range 20 {
		resp, _, err := callEcho(context.Background(), c, addr, "two", testPayload(100<<10))
		if err != nil || resp.Text != "two" {
			t.Fatalf("call %d after restart: resp %+v, err %v", i, resp, err)
		}
	}
	// The pool is refilled once, not dialed per call.
	if n := dials.Load() - before; n < 1 || n > 2 {
		t.Fatalf("%d dials for 20 calls after restart, want 1 or 2 (ConnsPerAddr)", n)
	}
}

func TestInFlightCallsFailUnavailableWhenConnectionBreaks(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	c := newClient(t, rpc.Options{})
	errc := make(chan error, 1)
	go func() {
		_, _, err := rpc.Call[echoReq, echoResp](context.Background(), c, ts.addr, methodBlock, &echoReq{}, nil)
		errc <- err
	}()
	<-ts.ev.started
	ts.srv.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, rpc.ErrUnavailable) {
			t.Fatalf("err = %v, want Unavailable", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight call did not fail")
	}
}

func TestShutdownFinishesCallsInFlight(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	release := make(chan struct{})
	started := make(chan struct{})
	rpc.Handle(ts.srv, 0xf012, func(ctx context.Context, _ *echoReq, _ []byte) (*echoResp, []byte, error) {
		close(started)
		<-release
		return &echoResp{Text: "finished"}, nil, nil
	})
	c := newClient(t, rpc.Options{})
	type result struct {
		resp *echoResp
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, _, err := rpc.Call[echoReq, echoResp](context.Background(), c, ts.addr, 0xf012, nil, nil)
		done <- result{resp, err}
	}()
	<-started
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- ts.srv.Shutdown(ctx)
	}()
	time.Sleep(50 * time.Millisecond) // let the go-away reach the client
	close(release)
	r := <-done
	if r.err != nil || r.resp.Text != "finished" {
		t.Fatalf("in-flight call during shutdown: %+v, %v", r.resp, r.err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-ts.done; !errors.Is(err, rpc.ErrServerClosed) {
		t.Errorf("Serve returned %v, want ErrServerClosed", err)
	}
	if _, _, err := callEcho(context.Background(), c, ts.addr, "late", nil); !errors.Is(err, rpc.ErrUnavailable) {
		t.Fatalf("call after shutdown: %v, want Unavailable", err)
	}
}

func TestClientClose(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	c := rpc.NewClient(rpc.Options{})
	if _, _, err := callEcho(context.Background(), c, ts.addr, "x", nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, _, err := callEcho(context.Background(), c, ts.addr, "x", nil); !errors.Is(err, rpc.ErrUnavailable) {
		t.Fatalf("call after Close: %v, want Unavailable", err)
	}
}

func TestDialFailureIsUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := newClient(t, rpc.Options{DialTimeout: time.Second})
	_, _, err = callEcho(context.Background(), c, addr, "x", nil)
	if !errors.Is(err, rpc.ErrUnavailable) {
		t.Fatalf("err = %v, want Unavailable", err)
	}
}

func TestPayloadReusableAfterCall(t *testing.T) {
	// Call must not touch the payload after it returns, even when it returns
	// early because of cancellation; the race detector checks the rest.
	ts := startServer(t, rpc.Options{})
	c := newClient(t, rpc.Options{})
	payload := testPayload(2 << 20)
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%4)*time.Millisecond)
		_, _, _ = rpc.Call[echoReq, echoResp](ctx, c, ts.addr, methodBlock, &echoReq{}, payload)
		cancel()
		for j := range payload {
			payload[j]++
		}
	}
	if _, _, err := callEcho(context.Background(), c, ts.addr, "x", payload); err != nil {
		t.Fatal(err)
	}
}

func TestBorrowedPayloadsAreNotReusedEarly(t *testing.T) {
	// A borrowing handler that answers with its own request payload: the
	// buffer goes back to the pool only after the response is written, so
	// concurrent calls reusing pooled buffers must never see each other's
	// bytes. Callers release response payloads too, to churn the pool.
	ts := startServer(t, rpc.Options{})
	const methodBorrowEcho rpc.Method = 0xf013
	rpc.Handle(ts.srv, methodBorrowEcho, echo, rpc.BorrowPayload())
	c := newClient(t, rpc.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				size := 64<<10 + (w*20+i)*4099
				payload := bytes.Repeat([]byte{byte(w*20 + i)}, size)
				_, got, err := rpc.Call[echoReq, echoResp](context.Background(), c, ts.addr, methodBorrowEcho, &echoReq{}, payload)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, payload) {
					errs <- fmt.Errorf("worker %d call %d: echoed payload corrupted", w, i)
					return
				}
				rpc.ReleasePayload(got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestContextAlreadyDone(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	c := newClient(t, rpc.Options{})
	expired, cancel1 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel1()
	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	tests := []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"deadline in the past", expired, context.DeadlineExceeded},
		{"canceled", canceled, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := callEcho(tt.ctx, c, ts.addr, "x", nil)
			if !errors.Is(err, tt.want) || rpc.CodeOf(err) != rpc.CodeOf(tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// gateConn is a connection whose writes can be held, as on a link that
// starts dropping every packet: a held write blocks until the gate opens or
// the connection closes.
type gateConn struct {
	net.Conn
	held    atomic.Bool
	closed  chan struct{}
	once    sync.Once
	stuck   chan struct{} // closed when a write first meets the held gate
	stuckMu sync.Once
}

func (c *gateConn) Write(p []byte) (int, error) {
	if c.held.Load() {
		c.stuckMu.Do(func() { close(c.stuck) })
		<-c.closed
		return 0, net.ErrClosed
	}
	return c.Conn.Write(p)
}

func (c *gateConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestCallEndsWhenPeerStopsTaking: a call whose request payload the peer
// stops taking mid-write ends with its context (not after the writer's far
// longer WriteTimeout); that connection is closed and the next call goes on
// another.
func TestCallEndsWhenPeerStopsTaking(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	var conns []*gateConn
	var mu sync.Mutex
	c := newClient(t, rpc.Options{WriteTimeout: time.Hour, Dial: func(ctx context.Context, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		g := &gateConn{Conn: nc, closed: make(chan struct{}), stuck: make(chan struct{})}
		mu.Lock()
		conns = append(conns, g)
		mu.Unlock()
		return g, nil
	}})
	if _, _, err := callEcho(context.Background(), c, ts.addr, "warm", nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	first := conns[0]
	mu.Unlock()
	first.held.Store(true)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _, err := callEcho(ctx, c, ts.addr, "stuck", testPayload(4<<20))
		done <- err
	}()
	// The context ends once the write is stuck mid-request: a deadline
	// that came first (a loaded machine) would withdraw the request before
	// its write began, leave the connection open, and the next call would
	// meet the held gate instead.
	select {
	case <-first.stuck:
	case <-time.After(30 * time.Second):
		t.Fatal("the request never reached the connection's writer")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the stuck call: %v, want Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a call whose payload the peer stopped taking did not end with its context")
	}
	againCtx, againCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer againCancel()
	resp, _, err := callEcho(againCtx, c, ts.addr, "again", nil)
	if err != nil || resp.Text != "again" {
		t.Fatalf("the next call: %+v, %v", resp, err)
	}
	select {
	case <-first.closed:
	default:
		t.Fatal("the connection the peer stopped taking is still open")
	}
}
