package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/flyfs/flyfs/core/durability"
	"github.com/flyfs/flyfs/core/rpc"
)

const (
	methodKeep       rpc.Method = 0xf0a0 // keeps the request payload (not borrowed), answers it back
	methodPooled     rpc.Method = 0xf0a1 // answers a pooled copy of the request payload
	methodCached     rpc.Method = 0xf0a2 // answers the same buffer every time (not pooled)
	methodBorrowEcho rpc.Method = 0xf0a5 // borrows its payload, answers its first bytes
	methodDurab      rpc.Method = 0xf0a3 // answers whether its context is relaxed, and in-process
)

// localServer starts a Local server with the test methods and returns it
// with a Local client that cannot dial: a call that reaches the server went
// in-process. It waits until the server takes local calls.
func localServer(t *testing.T, srvOpts, cliOpts rpc.Options) (*testServer, *rpc.Client, *atomic.Int32) {
	t.Helper()
	srvOpts.Local = true
	ts := startServer(t, srvOpts)
	var dials atomic.Int32
	cliOpts.Local = true
	cliOpts.Dial = func(context.Context, string) (net.Conn, error) {
		dials.Add(1)
		return nil, errors.New("dialing is off: local calls only")
	}
	c := newClient(t, cliOpts)
	deadline := time.Now().Add(5 * time.Second)
	for {
		// Any answer from the server (an error frame included) means the
		// server took the call: only a refused dial says it is not serving.
		_, _, err := callEcho(context.Background(), c, ts.addr, "up?", nil)
		if !errors.Is(err, rpc.ErrUnavailable) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server does not take local calls: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	dials.Store(0)
	return ts, c, &dials
}

func TestLocalCallsNeedNoSocket(t *testing.T) {
	ts, c, dials := localServer(t, rpc.Options{}, rpc.Options{})
	payload := bytes.Repeat([]byte("abc"), 100000)
	resp, out, err := callEcho(context.Background(), c, ts.addr, "hello", payload)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "hello" || resp.PayloadLen != len(payload) || !bytes.Equal(out, payload) {
		t.Fatalf("echo: %+v, %d payload bytes (equal %v)", resp, len(out), bytes.Equal(out, payload))
	}
	if n := dials.Load(); n != 0 {
		t.Fatalf("%d dials: the call went over a socket", n)
	}
	if n := ts.srv.Stats().Conns; n != 0 {
		t.Fatalf("server holds %d connections; local calls make none", n)
	}
}

// TestLocalMatchesTCP runs the same calls over TCP and in-process and wants
// the same answers and the same errors, code and text.
func TestLocalMatchesTCP(t *testing.T) {
	srvOpts := rpc.Options{Limits: rpc.Limits{MaxPayload: 1 << 20}}
	ts, local, _ := localServer(t, srvOpts, rpc.Options{})
	tcp := newClient(t, rpc.Options{})
	big := make([]byte, 2<<20)
	cases := []struct {
		name    string
		method  rpc.Method
		req     echoReq
		payload []byte
		timeout time.Duration
		// codeOnly: the text depends on which side saw the deadline first
		// (the handler or the caller), on either path.
		codeOnly bool
	}{
		{"echo", methodEcho, echoReq{Text: "x"}, []byte("payload"), 0, false},
		{"not found", methodFail, echoReq{Fail: "notfound"}, nil, 0, false},
		{"wrapped", methodFail, echoReq{Fail: "wrapped"}, nil, 0, false},
		{"service code", methodFail, echoReq{Fail: "service"}, nil, 0, false},
		{"plain error", methodFail, echoReq{Fail: "plain"}, nil, 0, false},
		{"panic", methodFail, echoReq{Fail: "panic"}, nil, 0, false},
		{"deadline inside", methodFail, echoReq{Fail: "deadline"}, nil, 0, false},
		{"deadline", methodBlock, echoReq{}, nil, 30 * time.Millisecond, true},
		{"unknown method", methodNone, echoReq{}, nil, 0, false},
		{"request too large", methodEcho, echoReq{}, big, 0, false},
	}
	call := func(c *rpc.Client, m rpc.Method, req echoReq, payload []byte, timeout time.Duration) (*echoResp, []byte, error) {
		ctx := context.Background()
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		return rpc.Call[echoReq, echoResp](ctx, c, ts.addr, m, &req, payload)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantResp, wantOut, wantErr := call(tcp, tc.method, tc.req, tc.payload, tc.timeout)
			gotResp, gotOut, gotErr := call(local, tc.method, tc.req, tc.payload, tc.timeout)
			if (wantErr == nil) != (gotErr == nil) || rpc.CodeOf(wantErr) != rpc.CodeOf(gotErr) {
				t.Fatalf("tcp: %v (%v); local: %v (%v)", wantErr, rpc.CodeOf(wantErr), gotErr, rpc.CodeOf(gotErr))
			}
			if wantErr != nil && !tc.codeOnly && wantErr.Error() != gotErr.Error() {
				t.Errorf("error text: tcp %q, local %q", wantErr, gotErr)
			}
			if wantErr == nil && (*wantResp != *gotResp || !bytes.Equal(wantOut, gotOut)) {
				t.Errorf("answer: tcp %+v %q, local %+v %q", wantResp, wantOut, gotResp, gotOut)
			}
		})
	}
}

func TestLocalToken(t *testing.T) {
	for _, tc := range []struct{ name, token string }{{"wrong token", "wrong"}, {"missing token", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			ts, local, _ := localServer(t, rpc.Options{Token: "right"}, rpc.Options{Token: tc.token})
			tcp := newClient(t, rpc.Options{Token: tc.token})
			_, _, wantErr := callEcho(context.Background(), tcp, ts.addr, "let me in", nil)
			_, _, gotErr := callEcho(context.Background(), local, ts.addr, "let me in", nil)
			if !errors.Is(gotErr, rpc.ErrUnauthenticated) || gotErr.Error() != wantErr.Error() {
				t.Fatalf("local: %v; tcp: %v", gotErr, wantErr)
			}
		})
	}
	ts, c, _ := localServer(t, rpc.Options{Token: "right"}, rpc.Options{Token: "right"})
	if _, _, err := callEcho(context.Background(), c, ts.addr, "in", nil); err != nil {
		t.Fatalf("the right token: %v", err)
	}
}

func TestLocalCancellationReachesHandler(t *testing.T) {
	ts, c, _ := localServer(t, rpc.Options{}, rpc.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := rpc.Call[echoReq, echoResp](ctx, c, ts.addr, methodBlock, &echoReq{}, nil)
		errc <- err
	}()
	<-ts.ev.started
	cancel()
	if err := <-errc; !errors.Is(err, rpc.ErrCanceled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled call: %v", err)
	}
	select {
	case err := <-ts.ev.ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler's context ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context was not canceled")
	}
}

func TestLocalServerCloseFailsCallsUnavailable(t *testing.T) {
	ts, c, _ := localServer(t, rpc.Options{}, rpc.Options{})
	errc := make(chan error, 1)
	go func() {
		_, _, err := rpc.Call[echoReq, echoResp](context.Background(), c, ts.addr, methodBlock, &echoReq{}, nil)
		errc <- err
	}()
	<-ts.ev.started
	closed := make(chan struct{})
	go func() { ts.srv.Close(); close(closed) }()
	select {
	case err := <-errc:
		if !errors.Is(err, rpc.ErrUnavailable) {
			t.Fatalf("call in flight at Close: %v, want Unavailable", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a call in flight at Close did not end")
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return: the local handler was not canceled")
	}
	if _, _, err := callEcho(context.Background(), c, ts.addr, "late", nil); !errors.Is(err, rpc.ErrUnavailable) {
		t.Fatalf("call after Close: %v, want Unavailable", err)
	}
}

// TestLocalPayloadOwnership: the caller may reuse its request payload once
// Call returns and write into the response payload it got, and neither
// reaches what a handler keeps; a pooled response arrives intact.
func TestLocalPayloadOwnership(t *testing.T) {
	ts, c, _ := localServer(t, rpc.Options{}, rpc.Options{})
	kept := make(chan []byte, 1)
	rpc.Handle(ts.srv, methodKeep, func(_ context.Context, _ *echoReq, p []byte) (*echoResp, []byte, error) {
		kept <- p
		return &echoResp{}, nil, nil
	})
	rpc.Handle(ts.srv, methodPooled, func(_ context.Context, _ *echoReq, p []byte) (*echoResp, []byte, error) {
		out := rpc.PayloadBuffer(len(p))[:len(p)]
		copy(out, p)
		return &echoResp{}, out, nil
	}, rpc.PooledResponse(), rpc.BorrowPayload())
	cached := []byte("the handler's own bytes")
	rpc.Handle(ts.srv, methodCached, func(context.Context, *echoReq, []byte) (*echoResp, []byte, error) {
		return &echoResp{}, cached, nil
	})

	buf := []byte("original request bytes")
	if _, _, err := rpc.Call[echoReq, echoResp](context.Background(), c, ts.addr, methodKeep, &echoReq{}, buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "overwritten by the caller")
	if got := <-kept; string(got) != "original request bytes" {
		t.Fatalf("the handler's kept payload reads %q after the caller reused its buffer", got)
	}

	want := bytes.Repeat([]byte{7}, 1<<20)
	_, out, err := rpc.Call[echoReq, echoResp](context.Background(), c, ts.addr, methodPooled, &echoReq{}, want)
	if err != nil || !bytes.Equal(out, want) {
		t.Fatalf("pooled response: %d bytes, equal %v, err %v", len(out), bytes.Equal(out, want), err)
	}

	// A borrowing handler reads the caller's buffer itself; what it answers
	// from it reaches the caller as a copy.
	rpc.Handle(ts.srv, methodBorrowEcho, func(_ context.Context, _ *echoReq, p []byte) (*echoResp, []byte, error) {
		return &echoResp{PayloadLen: len(p), Lent: unsafe.SliceData(p) == unsafe.SliceData(want)}, p[:4], nil
	}, rpc.BorrowPayload())
	resp, out, err := rpc.Call[echoReq, echoResp](context.Background(), c, ts.addr, methodBorrowEcho, &echoReq{}, want)
	if err != nil || !resp.Lent || resp.PayloadLen != len(want) {
		t.Fatalf("borrowing handler: %+v, %v; want the caller's own %d bytes", resp, err, len(want))
	}
	copy(want, "xxxx")
	if !bytes.Equal(out, []byte{7, 7, 7, 7}) {
		t.Fatalf("the answer taken from a borrowed payload changed with the caller's buffer: %v", out)
	}

	_, out, err = rpc.Call[echoReq, echoResp](context.Background(), c, ts.addr, methodCached, &echoReq{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	copy(out, "scribbled on by the caller")
	if string(cached) != "the handler's own bytes" {
		t.Fatalf("the caller's write reached the handler's buffer: %q", cached)
	}
}

func TestLocalInflightBudget(t *testing.T) {
	opts := rpc.Options{MaxInflightBytes: 4096, Limits: rpc.Limits{MaxMessage: 1024, MaxPayload: 2048}}
	ts, local, _ := localServer(t, opts, rpc.Options{})
	tcp := newClient(t, rpc.Options{})
	if _, _, err := callEcho(context.Background(), local, ts.addr, "small", make([]byte, 1000)); err != nil {
		t.Fatalf("a request within the budget: %v", err)
	}
	if st := ts.srv.Stats(); st.InflightBytes != 0 {
		t.Fatalf("%d bytes still counted in flight after the call", st.InflightBytes)
	}
	// Two calls held in the handler take the budget; the third is refused.
	hold := make(chan struct{})
	rpc.Handle(ts.srv, 0xf0a3, func(context.Context, *echoReq, []byte) (*echoResp, []byte, error) {
		<-hold
		return &echoResp{}, nil, nil
	})
	errc := make(chan error, 2)
	for range 2 {
		go func() {
			_, _, err := rpc.Call[echoReq, echoResp](context.Background(), local, ts.addr, 0xf0a3, &echoReq{}, make([]byte, 2000))
			errc <- err
		}()
	}
	for ts.srv.Stats().InflightBytes < 4000 {
		time.Sleep(time.Millisecond)
	}
	_, _, gotErr := callEcho(context.Background(), local, ts.addr, "over", make([]byte, 2000))
	_, _, wantErr := callEcho(context.Background(), tcp, ts.addr, "over", make([]byte, 2000))
	close(hold)
	if !errors.Is(gotErr, rpc.ErrResourceExhausted) || rpc.CodeOf(wantErr) != rpc.CodeOf(gotErr) {
		t.Fatalf("over the budget: local %v, tcp %v", gotErr, wantErr)
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

func TestLocalResponseOverClientLimits(t *testing.T) {
	lim := rpc.Options{Limits: rpc.Limits{MaxMessage: 4096, MaxPayload: 1024}}
	ts, local, _ := localServer(t, rpc.Options{}, lim)
	tcp := newClient(t, lim)
	_, _, wantErr := callEcho(context.Background(), tcp, ts.addr, "big answer", make([]byte, 1000))
	_, _, gotErr := callEcho(context.Background(), local, ts.addr, "big answer", make([]byte, 1000))
	if wantErr != nil || gotErr != nil {
		t.Fatalf("an answer within the limits: tcp %v, local %v", wantErr, gotErr)
	}
	// The request fits the server's limits; echoed, it exceeds the client's.
	_, _, wantErr = callEcho(context.Background(), tcp, ts.addr, "big answer", make([]byte, 2000))
	_, _, gotErr = callEcho(context.Background(), local, ts.addr, "big answer", make([]byte, 2000))
	if !errors.Is(gotErr, rpc.ErrResourceExhausted) || wantErr == nil || gotErr.Error() != wantErr.Error() {
		t.Fatalf("an answer over the client's limits: local %v, tcp %v", gotErr, wantErr)
	}
}

// A relaxed call that stays in the process tells its handler so: the
// caller ends with the process (core/durability); a strict one stays strict.
func TestLocalRelaxedCallsAreInProcess(t *testing.T) {
	ts, c, _ := localServer(t, rpc.Options{}, rpc.Options{})
	rpc.Handle(ts.srv, methodDurab, func(ctx context.Context, _ *echoReq, _ []byte) (*echoResp, []byte, error) {
		return &echoResp{Text: fmt.Sprint(durability.IsRelaxed(ctx), durability.IsInProcess(ctx))}, nil, nil
	})
	for _, tc := range []struct {
		ctx  context.Context
		want string
	}{
		{context.Background(), "false false"},
		{durability.Relaxed(context.Background()), "true true"},
	} {
		r, _, err := rpc.Call[echoReq, echoResp](tc.ctx, c, ts.addr, methodDurab, &echoReq{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Text != tc.want {
			t.Fatalf("relaxed and in-process: %q, want %q", r.Text, tc.want)
		}
	}
}
