package rpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/rpc"
)

// fuzzLimits keep allocations small: a header with a valid checksum may
// claim any length up to the limits.
var fuzzLimits = rpc.Limits{MaxMessage: 64 << 10, MaxPayload: 256 << 10}

func frameSeeds(t testing.TB) [][]byte {
	hello := encodeFrame(t, rpc.Header{Kind: rpc.KindHello}, []byte{0xa1, 0x01, 0x63, 'a', 'b', 'c'}, nil)
	req := encodeFrame(t, rpc.Header{Kind: rpc.KindRequest, ID: 1, Method: methodEcho, Timeout: 1000}, []byte{0xa1, 0x01, 0x62, 'h', 'i'}, []byte("payload"))
	return [][]byte{
		hello,
		req,
		encodeFrame(t, rpc.Header{Kind: rpc.KindResponse, ID: 1, Method: methodEcho, Code: rpc.NotFound}, []byte{0xa1, 0x01, 0x61, 'x'}, nil),
		encodeFrame(t, rpc.Header{Kind: rpc.KindCancel, ID: 1}, nil, nil),
		encodeFrame(t, rpc.Header{Kind: rpc.KindGoAway}, nil, nil),
		encodeFrame(t, rpc.Header{Kind: rpc.KindError, Code: rpc.Unauthenticated}, nil, nil),
		encodeFrame(t, rpc.Header{Kind: rpc.KindRequest, ID: 2, Method: methodFail}, []byte{0xa1, 0x02, 0x65, 'p', 'a', 'n', 'i', 'c'}, bytes.Repeat([]byte{7}, 300)),
		append(bytes.Clone(hello), req...),
		req[:rpc.HeaderSize-1],
		[]byte("FLYR"),
	}
}

// reseal rewrites the checksum of every header in a stream of frames, so
// the fuzzer can explore what lies behind a valid checksum (kinds, lengths,
// bodies) instead of stopping at the CRC it cannot forge.
func reseal(data []byte) []byte {
	data = bytes.Clone(data)
	for o := 0; o+rpc.HeaderSize <= len(data); {
		h := data[o : o+rpc.HeaderSize]
		binary.LittleEndian.PutUint32(h[36:], crc32c(h[:36]))
		o += rpc.HeaderSize + int(binary.LittleEndian.Uint32(h[28:])) + int(binary.LittleEndian.Uint32(h[32:]))
	}
	return data
}

func FuzzReadFrame(f *testing.F) {
	for _, s := range frameSeeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		if fix {
			data = reseal(data)
		}
		fr, err := rpc.ReadFrame(bytes.NewReader(data), fuzzLimits)
		if err != nil {
			if fr.Msg != nil || fr.Payload != nil {
				t.Fatalf("error %v but body returned", err)
			}
			return
		}
		// A frame that decodes re-encodes to exactly the bytes it came from.
		n := rpc.HeaderSize + int(fr.MsgLen) + int(fr.PayloadLen)
		if len(fr.Msg) != int(fr.MsgLen) || len(fr.Payload) != int(fr.PayloadLen) {
			t.Fatalf("lengths: header says %d+%d, got %d+%d", fr.MsgLen, fr.PayloadLen, len(fr.Msg), len(fr.Payload))
		}
		again := encodeFrame(t, fr.Header, fr.Msg, fr.Payload)
		if !bytes.Equal(again, data[:n]) {
			t.Fatalf("re-encoding differs from input")
		}
	})
}

// FuzzServerConn feeds arbitrary bytes to a server connection: whatever
// arrives, the server must not panic and must finish the connection once
// the peer hangs up.
func FuzzServerConn(f *testing.F) {
	seeds := frameSeeds(f)
	hello := seeds[0]
	for _, s := range seeds {
		f.Add(s, false)
		f.Add(append(bytes.Clone(hello), s...), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		if fix {
			data = reseal(data)
		}
		srv := rpc.NewServer(rpc.Options{
			Token:            "abc",
			Logger:           slog.New(slog.DiscardHandler),
			Limits:           fuzzLimits,
			HandshakeTimeout: time.Second,
			WriteTimeout:     time.Second,
		})
		rpc.Handle(srv, methodEcho, echo)
		registerFail(srv)
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			srv.ServeConn(server)
			close(done)
		}()
		go io.Copy(io.Discard, client)
		_ = client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		_, _ = client.Write(data)
		client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("server did not finish the connection after the peer hung up")
		}
		srv.Close()
	})
}

func registerFail(s *rpc.Server) {
	rpc.Handle(s, methodFail, func(ctx context.Context, req *echoReq, _ []byte) (*echoResp, []byte, error) {
		if req.Fail == "panic" {
			panic("fuzz panic")
		}
		return nil, nil, rpc.NewError(rpc.NotFound, req.Fail)
	})
}
