package rpctest_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/core/rpc/rpctest"
	"github.com/fxamacker/cbor/v2"
)

type req struct {
	Do string `cbor:"1,keyasint,omitempty"`
}

type resp struct {
	Echo string `cbor:"1,keyasint,omitempty"`
}

const method rpc.Method = 0xfe01

func start(t *testing.T, watch *rpctest.PanicWatch) string {
	srv := rpc.NewServer(rpc.Options{Token: "tok", Logger: watch.Logger()})
	rpc.Handle(srv, method, func(_ context.Context, r *req, payload []byte) (*resp, []byte, error) {
		switch r.Do {
		case "panic":
			var m map[string]int
			m["x"] = 1 // a nil map: a real bug, not a deliberate panic value
		case "internal":
			return nil, nil, rpc.NewError(rpc.Internal, "broken invariant")
		case "fail":
			return nil, nil, rpc.NewError(rpc.NotFound, "no such thing")
		}
		return &resp{Echo: r.Do}, payload, nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// failures runs fn with a testing.TB that records what fails it.
func failures(fn func(tb testing.TB)) string {
	tb := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	return tb.failed
}

type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func enc(t *testing.T, v any) []byte {
	b, err := cbor.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConnCall(t *testing.T) {
	addr := start(t, &rpctest.PanicWatch{})
	if _, err := rpctest.Dial(addr, "wrong", 0); rpc.CodeOf(err) != rpc.Unauthenticated {
		t.Fatalf("dial with a wrong token: %v", err)
	}
	c, err := rpctest.Dial(addr, "tok", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Call(method, enc(t, &req{Do: "hi"}), []byte("data"), 0)
	var got resp
	if err != nil || r.Code != rpc.OK || cbor.Unmarshal(r.Msg, &got) != nil || got.Echo != "hi" || string(r.Payload) != "data" {
		t.Fatalf("call: %+v %v", r, err)
	}
	if r, err := c.Call(method, enc(t, &req{Do: "fail"}), nil, 0); err != nil || r.Code != rpc.NotFound || r.Message != "no such thing" {
		t.Fatalf("failing call: %+v %v", r, err)
	}
	if r, err := c.Call(method, []byte{0xff}, nil, 0); err != nil || r.Code != rpc.InvalidArgument {
		t.Fatalf("undecodable message: %+v %v", r, err)
	}
	if r, err := c.Call(0xfe02, nil, nil, 0); err != nil || r.Code != rpc.Unimplemented {
		t.Fatalf("unknown method: %+v %v", r, err)
	}
}

// TestFuzzerFails: the checks a fuzz target relies on do fail.
func TestFuzzerFails(t *testing.T) {
	watch := &rpctest.PanicWatch{}
	fz := &rpctest.Fuzzer{Addr: start(t, watch), Token: "tok", Watches: []*rpctest.PanicWatch{watch}}
	defer fz.Close()
	m := rpctest.M[req](method)
	for _, c := range []struct {
		msg  []byte
		want string // in the failure; "" for none
	}{
		{enc(t, &req{Do: "ok"}), ""},
		{enc(t, &req{Do: "fail"}), ""},
		{[]byte{0xa1, 0x01, 0x01}, ""}, // {1: 1} does not decode into a string: InvalidArgument, as it should
		{enc(t, &req{Do: "panic"}), "panicked"},
		{enc(t, &req{Do: "internal"}), "Internal error for this input"},
	} {
		got := failures(func(tb testing.TB) { fz.Call(tb, m, c.msg, nil) })
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%x: failure %q, want %q", c.msg, got, c.want)
		}
	}
	// The panic was logged too, and reported once.
	if p := watch.Take(); len(p) != 0 {
		t.Errorf("panics left in the watch: %q", p)
	}
	if got := failures(func(tb testing.TB) { fz.Healthy(tb, m, enc(t, &req{Do: "fail"})) }); !strings.Contains(got, "NotFound") {
		t.Errorf("Healthy on a failing call: %q", got)
	}
	fz.Internal = []string{"broken invariant"}
	if got := failures(func(tb testing.TB) { fz.Call(tb, m, enc(t, &req{Do: "internal"}), nil) }); got != "" {
		t.Errorf("an allowed Internal error: %q", got)
	}
	// A method whose request type the server does not decode the same way.
	wrong := rpctest.M[struct {
		Do int `cbor:"1,keyasint"`
	}](method)
	if got := failures(func(tb testing.TB) { fz.Call(tb, wrong, enc(t, &req{Do: "ok"}), nil) }); !strings.Contains(got, "want InvalidArgument") {
		t.Errorf("a message the server took but the request type refuses: %q", got)
	}
}
