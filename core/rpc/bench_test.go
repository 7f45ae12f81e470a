package rpc_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/flyfs/flyfs/core/rpc"
)

const methodSink rpc.Method = 0xf020 // swallows the payload, answers its length

func benchSetup(b *testing.B) (*rpc.Client, string) { return benchSetupOpts(b, false) }

// benchSetupOpts starts a server and a client, both Local when local is set.
func benchSetupOpts(b *testing.B, local bool) (*rpc.Client, string) {
	b.Helper()
	quiet := slog.New(slog.DiscardHandler)
	ts := startServer(b, rpc.Options{Logger: quiet, Local: local})
	rpc.Handle(ts.srv, methodSink, func(_ context.Context, _ *echoReq, payload []byte) (*echoResp, []byte, error) {
		return &echoResp{PayloadLen: len(payload)}, nil, nil
	}, rpc.BorrowPayload())
	c := newClient(b, rpc.Options{Logger: quiet, Local: local})
	if _, _, err := callEcho(context.Background(), c, ts.addr, "warm-up", nil); err != nil {
		b.Fatal(err)
	}
	return c, ts.addr
}

// BenchmarkSmallCall measures tiny calls from many goroutines over one
// client (default pool).
func BenchmarkSmallCall(b *testing.B) {
	c, addr := benchSetup(b)
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req := &echoReq{Text: "ping"}
		for pb.Next() {
			if _, _, err := rpc.Call[echoReq, echoResp](context.Background(), c, addr, methodEcho, req, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchPayload(b *testing.B, size int) {
	c, addr := benchSetup(b)
	payload := testPayload(size)
	b.SetBytes(int64(size))
	b.SetParallelism(2) // 2×GOMAXPROCS callers
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, _, err := rpc.Call[echoReq, echoResp](context.Background(), c, addr, methodSink, &echoReq{}, payload)
			if err != nil || resp.PayloadLen != size {
				b.Errorf("resp %+v err %v", resp, err)
				return
			}
		}
	})
}

func BenchmarkPayload64KiB(b *testing.B) { benchPayload(b, 64<<10) }
func BenchmarkPayload1MiB(b *testing.B)  { benchPayload(b, 1<<20) }
func BenchmarkPayload4MiB(b *testing.B)  { benchPayload(b, 4<<20) }

// BenchmarkSerialCall measures one caller's round trip, over loopback TCP
// and in-process (Options.Local): what each metadata call of a mount pays
// for transport.
func BenchmarkSerialCall(b *testing.B) {
	for _, local := range []bool{false, true} {
		name := "tcp"
		if local {
			name = "local"
		}
		b.Run(name, func(b *testing.B) {
			c, addr := benchSetupOpts(b, local)
			req := &echoReq{Text: "ping"}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, _, err := rpc.Call[echoReq, echoResp](context.Background(), c, addr, methodEcho, req, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
