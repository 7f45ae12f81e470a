package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/rpc"
	"github.com/prometheus/client_golang/prometheus"
)

// Tests of the server's resource limits. They send the abuse by hand over
// raw TCP and check that the abusive connection is closed or refused with
// the right code while a well-behaved client goes on being served. Waits are
// for conditions, with bounds far beyond what the conditions need, so a
// loaded machine makes them slower, not flaky.

// patience bounds every wait for a condition.
const patience = 30 * time.Second

// waitFor polls cond until it holds, failing the test after patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", patience, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitInflight waits until the server's budget holds exactly n bytes.
func waitInflight(t *testing.T, ts *testServer, n int64) {
	t.Helper()
	waitFor(t, "in-flight bytes to be "+strconv.FormatInt(n, 10), func() bool { return ts.srv.Stats().InflightBytes == n })
}

// writeHeader writes the header of a request announcing msgLen+payloadLen
// bytes of body, and msg; the caller sends (or withholds) the payload.
func writeHeader(t *testing.T, conn net.Conn, id uint64, m rpc.Method, msg []byte, payloadLen uint32) {
	t.Helper()
	var hdr [rpc.HeaderSize]byte
	h := rpc.Header{Kind: rpc.KindRequest, ID: id, Method: m, MsgLen: uint32(len(msg)), PayloadLen: payloadLen}
	h.Put(hdr[:])
	if _, err := conn.Write(append(hdr[:], msg...)); err != nil {
		t.Fatal(err)
	}
}

// readUntilClosed reads frames until the server closes conn, and returns the
// error frame it sent first, if any, and whether a go-away came.
func readUntilClosed(t *testing.T, conn net.Conn) (errFrame *rpc.Frame, goAway bool) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(patience))
	for {
		f, err := rpc.ReadFrame(conn, rpc.Limits{})
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("server did not close the connection within %v", patience)
			}
			return errFrame, goAway
		}
		switch f.Kind {
		case rpc.KindError:
			if errFrame == nil {
				errFrame = &f
			}
		case rpc.KindGoAway:
			goAway = true
		}
	}
}

// readResponse reads frames until the response to id; it fails on a go-away
// unless allowGoAway.
func readResponse(t *testing.T, conn net.Conn, id uint64, allowGoAway bool) rpc.Frame {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(patience))
	defer conn.SetReadDeadline(time.Time{})
	for {
		f, err := rpc.ReadFrame(conn, rpc.Limits{})
		if err != nil {
			t.Fatalf("reading the response to request %d: %v", id, err)
		}
		switch {
		case f.Kind == rpc.KindResponse && f.ID == id:
			return f
		case f.Kind == rpc.KindGoAway && !allowGoAway:
			t.Fatalf("go-away before the response to request %d", id)
		case f.Kind == rpc.KindError:
			t.Fatalf("error frame before the response to request %d: %s %q", id, f.Code, f.Msg)
		}
	}
}

// wantErrorFrame checks that the server closed with an error frame of code
// whose text mentions what.
func wantErrorFrame(t *testing.T, f *rpc.Frame, code rpc.Code, what string) {
	t.Helper()
	if f == nil {
		t.Fatalf("connection closed without an error frame, want %s", code)
	}
	if f.Code != code || !strings.Contains(string(f.Msg), what) {
		t.Fatalf("error frame %s %q, want %s mentioning %q", f.Code, f.Msg, code, what)
	}
}

func refusedCount(t *testing.T, reg *prometheus.Registry, limit string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "flyfs_rpc_server_refused_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "limit" && l.GetValue() == limit {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestLimitDefaults(t *testing.T) {
	if rpc.DefaultMaxConns != 4096 || rpc.DefaultMaxInflightBytes != 1<<30 ||
		rpc.DefaultFrameTimeout != 30*time.Second || rpc.DefaultMinFrameRate != 1<<20 {
		t.Fatal("documented defaults changed; update doc.go and the Options comments")
	}
	// The largest frame must fit the default budget.
	if int64(rpc.DefaultMaxMessage)+int64(rpc.DefaultMaxPayload) > rpc.DefaultMaxInflightBytes {
		t.Fatal("default budget below the largest default frame")
	}
}

// TestStalledFrameIsCutOff: a frame that starts and stops, in its header or
// in its body, closes its connection with DeadlineExceeded once the frame
// deadline passes, and gives back what it held.
func TestStalledFrameIsCutOff(t *testing.T) {
	tests := []struct {
		name string
		send func(t *testing.T, conn net.Conn)
	}{
		{"header", func(t *testing.T, conn net.Conn) {
			var hdr [rpc.HeaderSize]byte
			h := rpc.Header{Kind: rpc.KindRequest, ID: 1, Method: methodEcho}
			h.Put(hdr[:])
			if _, err := conn.Write(hdr[:20]); err != nil {
				t.Fatal(err)
			}
		}},
		{"body", func(t *testing.T, conn net.Conn) {
			writeHeader(t, conn, 1, methodEcho, []byte{0xa0}, 1<<20)
			if _, err := conn.Write(testPayload(512 << 10)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			// The frame's allowance (300 ms plus 1 MiB at 4 MiB/s) leaves a
			// loaded machine 250 ms to read the half that is sent before the
			// stall's 300 ms begin; at 64 MiB/s it had 15 ms, and a slower
			// read made the cut-off "not received within" instead.
			ts := startServer(t, rpc.Options{FrameTimeout: 300 * time.Millisecond, MinFrameRate: 4 << 20, Registerer: reg})
			conn := rawConn(t, ts.addr, "")
			tt.send(t, conn)
			mustServe(t, ts, rpc.Options{}) // served while the frame stalls
			f, _ := readUntilClosed(t, conn)
			wantErrorFrame(t, f, rpc.DeadlineExceeded, "stalled")
			waitInflight(t, ts, 0)
			mustServe(t, ts, rpc.Options{})
			if logs := ts.logs.String(); !strings.Contains(logs, "frame deadline passed") {
				t.Errorf("server did not log the deadline:\n%s", logs)
			}
			if n := refusedCount(t, reg, "frame_deadline"); n != 1 {
				t.Errorf("refused_total{limit=frame_deadline} = %v, want 1", n)
			}
		})
	}
}

// TestTricklingFrameIsCutOff: a frame that keeps coming, but too slowly, is
// cut off once its allowance (FrameTimeout plus its size at MinFrameRate)
// has passed, however regularly its bytes arrive.
func TestTricklingFrameIsCutOff(t *testing.T) {
	ts := startServer(t, rpc.Options{FrameTimeout: 2 * time.Second, MinFrameRate: 1 << 20})
	conn := rawConn(t, ts.addr, "")
	writeHeader(t, conn, 1, methodEcho, nil, 1<<20) // allowed 2s + 1s
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := conn.Write(make([]byte, 64)); err != nil {
				return // cut off
			}
		}
	}()
	f, _ := readUntilClosed(t, conn)
	close(stop)
	<-trickled
	wantErrorFrame(t, f, rpc.DeadlineExceeded, "not received within 3s")
	waitInflight(t, ts, 0)
	mustServe(t, ts, rpc.Options{})
}

// TestSlowFrameWithinItsAllowancePasses: the frame deadline scales with the
// frame. A 4 MiB request trickled in over about a second, twice the fixed
// FrameTimeout, is well within FrameTimeout plus 4 MiB at MinFrameRate
// (4.5s), and is served.
func TestSlowFrameWithinItsAllowancePasses(t *testing.T) {
	ts := startServer(t, rpc.Options{FrameTimeout: 500 * time.Millisecond, MinFrameRate: 1 << 20})
	conn := rawConn(t, ts.addr, "")
	payload := testPayload(4 << 20)
	writeHeader(t, conn, 1, methodEcho, []byte{0xa0}, uint32(len(payload)))
	const pieces = 16
	step := len(payload) / pieces
	for i := 0; i < pieces; i++ {
		time.Sleep(60 * time.Millisecond)
		if _, err := conn.Write(payload[i*step : (i+1)*step]); err != nil {
			t.Fatalf("piece %d: %v", i, err)
		}
	}
	f := readResponse(t, conn, 1, false)
	if f.Code != rpc.OK || !bytes.Equal(f.Payload, payload) {
		t.Fatalf("response code %s with %d payload bytes, want OK echoing %d", f.Code, len(f.Payload), len(payload))
	}
	waitInflight(t, ts, 0)
}

// TestIdleConnectionsStayOpen: there is no deadline between frames by
// default; a pooled connection idle for many frame timeouts still works.
func TestIdleConnectionsStayOpen(t *testing.T) {
	ts := startServer(t, rpc.Options{FrameTimeout: 100 * time.Millisecond})
	var dials atomic.Int32
	c := newClient(t, rpc.Options{ConnsPerAddr: 1, Dial: func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}})
	for i := 0; i < 3; i++ {
		if i > 0 {
			time.Sleep(500 * time.Millisecond) // five frame timeouts
		}
		if _, _, err := callEcho(context.Background(), c, ts.addr, "after a pause", nil); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("client dialed %d times, want 1: idle connections must stay open", n)
	}
}

func TestIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	t.Run("idle connection gets a go-away, then is closed", func(t *testing.T) {
		ts := startServer(t, rpc.Options{IdleTimeout: idle})
		conn := rawConn(t, ts.addr, "")
		f, goAway := readUntilClosed(t, conn)
		if !goAway || f != nil {
			t.Fatalf("go-away %v, error frame %+v; want a go-away and a quiet close", goAway, f)
		}
		waitFor(t, "the server to drop the connection", func() bool { return ts.srv.Stats().Conns == 0 })
	})
	t.Run("connection with a running call is not idle", func(t *testing.T) {
		ts := startServer(t, rpc.Options{IdleTimeout: idle})
		conn := rawConn(t, ts.addr, "")
		writeHeader(t, conn, 1, methodBlock, nil, 0)
		select {
		case <-ts.ev.started:
		case <-time.After(patience):
			t.Fatal("handler never started")
		}
		time.Sleep(4 * idle)
		if err := rpc.WriteFrame(conn, rpc.Header{Kind: rpc.KindRequest, ID: 2, Method: methodEcho}, []byte{0xa0}, []byte("hi")); err != nil {
			t.Fatal(err)
		}
		if f := readResponse(t, conn, 2, false); f.Code != rpc.OK {
			t.Fatalf("echo during a long call: %s", f.Code)
		}
	})
	t.Run("clients redial after an idle close", func(t *testing.T) {
		ts := startServer(t, rpc.Options{IdleTimeout: idle})
		c := newClient(t, rpc.Options{})
		if _, _, err := callEcho(context.Background(), c, ts.addr, "one", nil); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "idle connections to close", func() bool { return ts.srv.Stats().Conns == 0 })
		if _, _, err := callEcho(context.Background(), c, ts.addr, "two", nil); err != nil {
			t.Fatalf("call after the idle close: %v", err)
		}
	})
}

// TestMaxConns: beyond MaxConns a connection is refused with
// ResourceExhausted naming the limit; those open keep working, and once one
// closes a new one is accepted.
func TestMaxConns(t *testing.T) {
	reg := prometheus.NewRegistry()
	ts := startServer(t, rpc.Options{MaxConns: 2, Registerer: reg})
	a := rawConn(t, ts.addr, "")
	b := rawConn(t, ts.addr, "")

	c := newClient(t, rpc.Options{ConnsPerAddr: 1})
	_, _, err := callEcho(context.Background(), c, ts.addr, "let me in", nil)
	if !errors.Is(err, rpc.ErrResourceExhausted) || !strings.Contains(err.Error(), "MaxConns") || !strings.Contains(err.Error(), "2 connections") {
		t.Fatalf("call beyond the cap: %v, want ResourceExhausted naming MaxConns and 2 connections", err)
	}
	// Refused by hand too: the error frame comes without a hello.
	raw, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	f, _ := readUntilClosed(t, raw)
	wantErrorFrame(t, f, rpc.ResourceExhausted, "MaxConns")

	for i, conn := range []net.Conn{a, b} {
		if err := rpc.WriteFrame(conn, rpc.Header{Kind: rpc.KindRequest, ID: 1, Method: methodEcho}, []byte{0xa0}, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if f := readResponse(t, conn, 1, false); f.Code != rpc.OK {
			t.Fatalf("connection %d open before the cap: response %s", i, f.Code)
		}
	}
	if n := ts.srv.Stats().Conns; n != 2 {
		t.Fatalf("server holds %d connections, want 2", n)
	}

	b.Close()
	waitFor(t, "the server to drop a closed connection", func() bool { return ts.srv.Stats().Conns == 1 })
	if _, _, err := callEcho(context.Background(), c, ts.addr, "now?", nil); err != nil {
		t.Fatalf("call once below the cap: %v", err)
	}
	if !strings.Contains(ts.logs.String(), "too many connections") {
		t.Errorf("server did not log the refusal:\n%s", ts.logs)
	}
	if n := refusedCount(t, reg, "max_conns"); n != 2 {
		t.Errorf("refused_total{limit=max_conns} = %v, want 2", n)
	}
}

// TestMaxInflightBytes: a request the budget cannot take is answered
// ResourceExhausted, on a connection that stays open and in step; the budget
// counts requests until their calls are done, borrowed payloads included.
func TestMaxInflightBytes(t *testing.T) {
	const mib = 1 << 20
	reg := prometheus.NewRegistry()
	ts := startServer(t, rpc.Options{Limits: rpc.Limits{MaxPayload: mib}, MaxInflightBytes: mib + 64<<10, Registerer: reg})
	gate := make(chan struct{})
	entered := make(chan struct{}, 1)
	const methodGatedBorrow rpc.Method = 0xf030
	rpc.Handle(ts.srv, methodGatedBorrow, func(ctx context.Context, req *echoReq, payload []byte) (*echoResp, []byte, error) {
		entered <- struct{}{}
		<-gate
		return echo(ctx, req, payload)
	}, rpc.BorrowPayload())

	var dials atomic.Int32
	c := newClient(t, rpc.Options{ConnsPerAddr: 1, Dial: func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}})

	// A hog: a call that holds 1 MiB and never finishes by itself.
	hog := rawConn(t, ts.addr, "")
	writeHeader(t, hog, 1, methodBlock, nil, mib)
	if _, err := hog.Write(testPayload(mib)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ts.ev.started:
	case <-time.After(patience):
		t.Fatal("hog's handler never started")
	}
	if got := ts.srv.Stats().InflightBytes; got != mib {
		t.Fatalf("in-flight bytes %d while the hog runs, want %d", got, mib)
	}

	big := testPayload(600 << 10)
	_, _, err := callEcho(context.Background(), c, ts.addr, "big", big)
	if !errors.Is(err, rpc.ErrResourceExhausted) || !strings.Contains(err.Error(), "MaxInflightBytes") {
		t.Fatalf("call beyond the budget: %v, want ResourceExhausted naming MaxInflightBytes", err)
	}
	// The refused body was skipped: the same connection carries on.
	mustServe(t, ts, rpc.Options{})
	if resp, _, err := callEcho(context.Background(), c, ts.addr, "small", []byte("fits")); err != nil || resp.Text != "small" {
		t.Fatalf("small call after the refusal: %+v, %v", resp, err)
	}

	// The hog's call ends; its bytes come back.
	if err := rpc.WriteFrame(hog, rpc.Header{Kind: rpc.KindCancel, ID: 1}, nil, nil); err != nil {
		t.Fatal(err)
	}
	waitInflight(t, ts, 0)
	if _, got, err := callEcho(context.Background(), c, ts.addr, "big", big); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("call within the budget: %d bytes back, %v", len(got), err)
	}

	// A borrowed payload counts until its response is written. The echo
	// above may still hold its bytes for a moment after its answer arrived:
	// wait them out, or the next call can be refused for want of budget.
	waitInflight(t, ts, 0)
	done := make(chan error, 1)
	go func() {
		_, got, err := rpc.Call[echoReq, echoResp](context.Background(), c, ts.addr, methodGatedBorrow, &echoReq{}, big)
		if err == nil && !bytes.Equal(got, big) {
			err = errors.New("borrowed echo corrupted")
		}
		done <- err
	}()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("the borrowing call ended before its handler started: %v", err)
	case <-time.After(patience):
		t.Fatal("borrowing handler never started")
	}
	if got := ts.srv.Stats().InflightBytes; got < int64(len(big)) {
		t.Fatalf("in-flight bytes %d while a borrowing handler holds %d", got, len(big))
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitInflight(t, ts, 0)

	if n := dials.Load(); n != 1 {
		t.Errorf("client dialed %d times, want 1: a refusal must not close the connection", n)
	}
	if n := refusedCount(t, reg, "inflight_bytes"); n != 1 {
		t.Errorf("refused_total{limit=inflight_bytes} = %v, want 1", n)
	}
	if !strings.Contains(ts.logs.String(), "in-flight byte budget exhausted") {
		t.Errorf("server did not log the refusal:\n%s", ts.logs)
	}
}

// TestBudgetReleasedWhenResponsesAreNeverWritten: a client that sends big
// requests and never reads has its connection closed by the write timeout,
// and the requests whose responses were still queued give their bytes back.
func TestBudgetReleasedWhenResponsesAreNeverWritten(t *testing.T) {
	ts := startServer(t, rpc.Options{WriteTimeout: 500 * time.Millisecond})
	conn := rawConn(t, ts.addr, "")
	payload := testPayload(16 << 20) // more than the socket buffers hold
	for id := uint64(1); id <= 3; id++ {
		err := rpc.WriteFrame(conn, rpc.Header{Kind: rpc.KindRequest, ID: id, Method: methodEcho}, []byte{0xa0}, payload)
		if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			break // on a loaded machine the write timeout may drop it before the last request is sent
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	waitInflight(t, ts, 0)
	waitFor(t, "the server to drop the connection", func() bool { return ts.srv.Stats().Conns == 0 })
	mustServe(t, ts, rpc.Options{})
}

// TestOversizedFramesFromManyConnectionsAreCutOff is the reported attack:
// eight connections each announce a 64 MiB payload, send 60 MiB and stall.
// Their 512 MiB are charged to the budget while a good client is served
// beside them; once the frame deadline passes each is closed with
// DeadlineExceeded and the budget is back to zero.
func TestOversizedFramesFromManyConnectionsAreCutOff(t *testing.T) {
	const (
		conns     = 8
		announced = 64 << 20
		sent      = 60 << 20
	)
	// The frame deadline that cuts them is the stall: 60 MiB arrive at
	// whatever speed the machine manages (slowly under the race detector),
	// well within 5s plus 64 MiB at the default 1 MiB/s, then nothing.
	ts := startServer(t, rpc.Options{FrameTimeout: 5 * time.Second})
	msg := []byte{0xa0}
	abusers := make([]net.Conn, conns)
	for i := range abusers {
		abusers[i] = rawConn(t, ts.addr, "")
	}
	for _, conn := range abusers {
		writeHeader(t, conn, 1, methodEcho, msg, announced)
	}
	// Each is charged in full as soon as its header is read.
	charged := int64(conns) * (announced + int64(len(msg)))
	waitInflight(t, ts, charged)

	body := testPayload(sent)
	t0 := time.Now()
	var wg sync.WaitGroup
	writeErrs := make([]error, conns)
	for i, conn := range abusers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, writeErrs[i] = conn.Write(body)
		}()
	}
	wg.Wait()
	t.Logf("writes took %v", time.Since(t0))
	for i, err := range writeErrs {
		if err != nil {
			t.Fatalf("abuser %d could not send its 60 MiB: %v", i, err)
		}
	}

	// Meanwhile a well-behaved client is served, big payloads included.
	good := rpc.NewClient(rpc.Options{Logger: (&logBuffer{}).logger()})
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	p := testPayload(4 << 20)
	if _, got, err := callEcho(ctx, good, ts.addr, "beside the abuse", p); err != nil || !bytes.Equal(got, p) {
		t.Fatalf("good client during the abuse: %d bytes back, %v", len(got), err)
	}
	good.Close()

	for i, conn := range abusers {
		f, _ := readUntilClosed(t, conn)
		if f == nil || f.Code != rpc.DeadlineExceeded || !strings.Contains(string(f.Msg), "stalled") {
			t.Fatalf("abuser %d: closed with error frame %+v, want DeadlineExceeded for a stall", i, f)
		}
	}
	waitInflight(t, ts, 0)
	waitFor(t, "the server to drop every connection", func() bool { return ts.srv.Stats().Conns == 0 })
	mustServe(t, ts, rpc.Options{})
	if n := strings.Count(ts.logs.String(), "frame deadline passed; closing connection"); n != conns {
		t.Errorf("server logged %d frame deadlines, want %d", n, conns)
	}
}
