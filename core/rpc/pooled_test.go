package rpc_test

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"

	"github.com/flyfs/flyfs/core/rpc"
)

type fillReq struct {
	Byte byte `cbor:"1,keyasint"`
	N    int  `cbor:"2,keyasint"`
}
type fillResp struct{}

// TestPooledResponseIsNotReusedEarly: pooled response buffers go back to the
// pool only after they are sent, so concurrent calls never see each other's
// bytes.
func TestPooledResponseIsNotReusedEarly(t *testing.T) {
	srv := rpc.NewServer(rpc.Options{})
	rpc.Handle(srv, 0x7f01, func(ctx context.Context, req *fillReq, _ []byte) (*fillResp, []byte, error) {
		buf := rpc.PayloadBuffer(req.N)
		for i := range buf {
			buf[i] = req.Byte
		}
		return &fillResp{}, buf, nil
	}, rpc.PooledResponse())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	c := rpc.NewClient(rpc.Options{})
	defer c.Close()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				b := byte(g*50 + i)
				_, data, err := rpc.Call[fillReq, fillResp](context.Background(), c, l.Addr().String(), 0x7f01, &fillReq{Byte: b, N: 256 << 10}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(data, bytes.Repeat([]byte{b}, 256<<10)) {
					t.Errorf("call %d/%d got someone else's bytes", g, i)
					return
				}
				rpc.ReleasePayload(data)
			}
		}(g)
	}
	wg.Wait()
}
