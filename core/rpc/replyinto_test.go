package rpc_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/flyfs/flyfs/core/rpc"
)

const methodFill rpc.Method = 0xf0a6 // answers N bytes of Byte in a ReplyBuffer; Nested also answers a nested call's

type fillInto struct {
	Byte   byte `cbor:"1,keyasint"`
	N      int  `cbor:"2,keyasint"`
	Nested bool `cbor:"3,keyasint"`
}

// TestReplyIntoLocal: an in-process handler answers in the memory its
// caller offered, once per offer; a withdrawn offer, or a call over a
// connection, gets a pooled buffer and the caller's memory stays untouched.
func TestReplyIntoLocal(t *testing.T) {
	ts, local, _ := localServer(t, rpc.Options{}, rpc.Options{})
	tcp := newClient(t, rpc.Options{})
	var c *rpc.Client
	rpc.Handle(ts.srv, methodFill, func(ctx context.Context, req *fillInto, _ []byte) (*echoResp, []byte, error) {
		if req.Nested { // a nested local call under the same context may not take the offer again
			_, inner, err := rpc.Call[fillInto, echoResp](ctx, c, ts.addr, methodFill, &fillInto{Byte: req.Byte + 1, N: req.N}, nil)
			if err != nil {
				return nil, nil, err
			}
			defer rpc.ReleasePayload(inner)
		}
		out := rpc.ReplyBuffer(ctx, req.N)
		for i := range out {
			out[i] = req.Byte
		}
		return &echoResp{}, out, nil
	}, rpc.PooledResponse())
	call := func(ctx context.Context, via *rpc.Client, req fillInto) []byte {
		t.Helper()
		c = via
		_, out, err := rpc.Call[fillInto, echoResp](ctx, via, ts.addr, methodFill, &req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, bytes.Repeat([]byte{req.Byte}, req.N)) {
			t.Fatalf("%+v: wrong answer", req)
		}
		return out
	}
	mem := make([]byte, 1<<20)
	if out := call(rpc.ReplyInto(context.Background(), mem), local, fillInto{Byte: 1, N: 1 << 20}); !rpc.InMemory(out, mem) {
		t.Fatal("an in-process handler did not answer in the offered memory")
	}
	if out := call(rpc.ReplyInto(context.Background(), mem), local, fillInto{Byte: 2, N: 1<<20 + 1}); rpc.InMemory(out, mem) {
		t.Fatal("an answer larger than the offer landed in it")
	}
	clear(mem)
	if out := call(rpc.WithoutReplyInto(rpc.ReplyInto(context.Background(), mem)), local, fillInto{Byte: 3, N: 4096}); rpc.InMemory(out, mem) || mem[0] != 0 {
		t.Fatal("a withdrawn offer was used")
	}
	// The nested call takes the offer first; the outer answer must then
	// come in a buffer of its own, or it would overwrite the inner one's.
	if out := call(rpc.ReplyInto(context.Background(), mem), local, fillInto{Byte: 4, N: 4096, Nested: true}); rpc.InMemory(out, mem) || mem[0] != 5 {
		t.Fatalf("one offer served two answers (outer in it: %v, memory holds %d)", rpc.InMemory(out, mem), mem[0])
	}
	clear(mem)
	if out := call(rpc.ReplyInto(context.Background(), mem), tcp, fillInto{Byte: 6, N: 4096}); rpc.InMemory(out, mem) || mem[0] != 0 {
		t.Fatal("an offer crossed a connection")
	}
}
