package rpc_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/flyfs/flyfs/core/rpc"
)

func encodeFrame(t testing.TB, h rpc.Header, msg, payload []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := rpc.WriteFrame(&b, h, msg, payload); err != nil {
		t.Fatalf("WriteFrame: %v", err)
	}
	return b.Bytes()
}

func TestFrameRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		h       rpc.Header
		msg     []byte
		payload []byte
	}{
		{"empty hello", rpc.Header{Kind: rpc.KindHello}, nil, nil},
		{"request with message", rpc.Header{Kind: rpc.KindRequest, ID: 1<<63 + 5, Method: 0x0301, Timeout: 1500}, []byte{0xa1, 0x01, 0x02}, nil},
		{"request with payload", rpc.Header{Kind: rpc.KindRequest, ID: 9, Method: 7, Flags: 3}, []byte{0xa0}, bytes.Repeat([]byte{0xab}, 70000)},
		{"error response", rpc.Header{Kind: rpc.KindResponse, ID: 2, Method: 7, Code: rpc.NotFound}, []byte("x"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := encodeFrame(t, tt.h, tt.msg, tt.payload)
			if len(raw) != rpc.HeaderSize+len(tt.msg)+len(tt.payload) {
				t.Fatalf("encoded %d bytes, want %d", len(raw), rpc.HeaderSize+len(tt.msg)+len(tt.payload))
			}
			f, err := rpc.ReadFrame(bytes.NewReader(raw), rpc.Limits{})
			if err != nil {
				t.Fatalf("ReadFrame: %v", err)
			}
			want := tt.h
			want.MsgLen, want.PayloadLen = uint32(len(tt.msg)), uint32(len(tt.payload))
			if f.Header != want {
				t.Errorf("header = %+v, want %+v", f.Header, want)
			}
			if !bytes.Equal(f.Msg, tt.msg) || !bytes.Equal(f.Payload, tt.payload) {
				t.Errorf("body mismatch: msg %d bytes, payload %d bytes", len(f.Msg), len(f.Payload))
			}
		})
	}
}

func TestReadFrameRejects(t *testing.T) {
	valid := encodeFrame(t, rpc.Header{Kind: rpc.KindRequest, ID: 1, Method: 2}, []byte{0xa1, 0x01, 0x02}, []byte("payload"))
	mutate := func(f func(b []byte)) []byte {
		b := bytes.Clone(valid)
		f(b)
		return b
	}
	// reseal recomputes the checksum after a change, so only the change is wrong.
	reseal := func(f func(b []byte)) []byte {
		return mutate(func(b []byte) {
			f(b)
			var h [rpc.HeaderSize]byte
			copy(h[:], b)
			binary.LittleEndian.PutUint32(b[36:], crc32c(h[:36]))
		})
	}
	tests := []struct {
		name string
		in   []byte
		lim  rpc.Limits
		want error
	}{
		{"empty stream is a clean EOF", nil, rpc.Limits{}, io.EOF},
		{"bad magic", mutate(func(b []byte) { b[0] = 'X' }), rpc.Limits{}, rpc.ErrBadMagic},
		{"bad version", reseal(func(b []byte) { b[4] = 9 }), rpc.Limits{}, rpc.ErrBadVersion},
		{"flipped id bit", mutate(func(b []byte) { b[8] ^= 1 }), rpc.Limits{}, rpc.ErrBadChecksum},
		{"flipped length bit", mutate(func(b []byte) { b[33] ^= 0x80 }), rpc.Limits{}, rpc.ErrBadChecksum},
		{"unknown kind", reseal(func(b []byte) { b[5] = 99 }), rpc.Limits{}, rpc.ErrBadKind},
		{"kind zero", reseal(func(b []byte) { b[5] = 0 }), rpc.Limits{}, rpc.ErrBadKind},
		{"message over limit", valid, rpc.Limits{MaxMessage: 2}, rpc.ErrFrameTooLarge},
		{"payload over limit", valid, rpc.Limits{MaxPayload: 6}, rpc.ErrFrameTooLarge},
		{"exactly at limits", valid, rpc.Limits{MaxMessage: 3, MaxPayload: 7}, nil},
		{"huge declared payload", reseal(func(b []byte) { binary.LittleEndian.PutUint32(b[32:], 0xffffffff) }), rpc.Limits{}, rpc.ErrFrameTooLarge},
		{"truncated header", valid[:20], rpc.Limits{}, rpc.ErrTruncated},
		{"truncated body", valid[:len(valid)-1], rpc.Limits{}, rpc.ErrTruncated},
		{"header without body", valid[:rpc.HeaderSize], rpc.Limits{}, rpc.ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rpc.ReadFrame(bytes.NewReader(tt.in), tt.lim)
			if !errors.Is(err, tt.want) {
				t.Fatalf("ReadFrame error = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("truncation also matches io.ErrUnexpectedEOF", func(t *testing.T) {
		_, err := rpc.ReadFrame(bytes.NewReader(valid[:len(valid)-1]), rpc.Limits{})
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("error = %v, want io.ErrUnexpectedEOF in chain", err)
		}
	})
}

func TestReadFrameSequence(t *testing.T) {
	var stream []byte
	for i := range 5 {
		stream = append(stream, encodeFrame(t, rpc.Header{Kind: rpc.KindRequest, ID: uint64(i + 1)}, nil, bytes.Repeat([]byte{byte(i)}, i*100))...)
	}
	r := bytes.NewReader(stream)
	for i := range 5 {
		f, err := rpc.ReadFrame(r, rpc.Limits{})
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.ID != uint64(i+1) || len(f.Payload) != i*100 {
			t.Fatalf("frame %d: id %d payload %d bytes", i, f.ID, len(f.Payload))
		}
	}
	if _, err := rpc.ReadFrame(r, rpc.Limits{}); err != io.EOF {
		t.Fatalf("after last frame: %v, want io.EOF", err)
	}
}
