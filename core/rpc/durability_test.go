package rpc_test

import (
	"context"
	"github.com/flyfs/flyfs/core/durability"
	"testing"

	"github.com/flyfs/flyfs/core/rpc"
)

const methodRelaxed rpc.Method = 0xf0b0 // answers whether its request was relaxed

// TestRelaxedReachesHandler: a call made with a Relaxed context reaches the
// handler as Relaxed, over TCP and in-process alike; Strict undoes it.
func TestRelaxedReachesHandler(t *testing.T) {
	answer := func(ctx context.Context, _ *echoReq, _ []byte) (*echoResp, []byte, error) {
		if durability.IsRelaxed(ctx) {
			return &echoResp{Text: "relaxed"}, nil, nil
		}
		return &echoResp{Text: "strict"}, nil, nil
	}
	tcp := startServer(t, rpc.Options{})
	rpc.Handle(tcp.srv, methodRelaxed, answer)
	local, lc, dials := localServer(t, rpc.Options{}, rpc.Options{})
	rpc.Handle(local.srv, methodRelaxed, answer)
	bg := context.Background()
	cases := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"plain", bg, "strict"},
		{"relaxed", durability.Relaxed(bg), "relaxed"},
		{"strict over relaxed", durability.Strict(durability.Relaxed(bg)), "strict"},
		{"relaxed again", durability.Relaxed(durability.Strict(durability.Relaxed(bg))), "relaxed"},
	}
	for _, side := range []struct {
		name string
		c    *rpc.Client
		addr string
	}{{"tcp", newClient(t, rpc.Options{}), tcp.addr}, {"local", lc, local.addr}} {
		for _, tc := range cases {
			resp, _, err := rpc.Call[echoReq, echoResp](tc.ctx, side.c, side.addr, methodRelaxed, &echoReq{}, nil)
			if err != nil {
				t.Fatalf("%s %s: %v", side.name, tc.name, err)
			}
			if resp.Text != tc.want {
				t.Errorf("%s %s: the handler saw %s, want %s", side.name, tc.name, resp.Text, tc.want)
			}
		}
	}
	if n := dials.Load(); n != 0 {
		t.Fatalf("the local client dialed %d times", n)
	}
}
