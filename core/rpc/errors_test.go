package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/flyfs/flyfs/core/rpc"
)

const codeChunkStale = rpc.CodeServiceBase + 42

func init() { rpc.RegisterCode(codeChunkStale, "ChunkStale") }

func TestCodeOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want rpc.Code
	}{
		{"nil", nil, rpc.OK},
		{"rpc error", rpc.Errorf(rpc.NotFound, "chunk %d", 7), rpc.NotFound},
		{"wrapped rpc error", fmt.Errorf("read: %w", rpc.NewError(rpc.DataLoss, "bad crc")), rpc.DataLoss},
		{"service code", rpc.NewError(codeChunkStale, "v3 < v4"), codeChunkStale},
		{"context deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), rpc.DeadlineExceeded},
		{"context canceled", context.Canceled, rpc.Canceled},
		{"plain error", errors.New("boom"), rpc.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rpc.CodeOf(tt.err); got != tt.want {
				t.Errorf("CodeOf = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestErrorIs(t *testing.T) {
	err := fmt.Errorf("open: %w", rpc.Errorf(rpc.NotFound, "no such inode"))
	if !errors.Is(err, rpc.ErrNotFound) {
		t.Error("errors.Is(err, ErrNotFound) = false")
	}
	if errors.Is(err, rpc.ErrAlreadyExists) {
		t.Error("errors.Is(err, ErrAlreadyExists) = true")
	}
	dl := rpc.NewError(rpc.DeadlineExceeded, "too slow")
	if !errors.Is(dl, context.DeadlineExceeded) || !errors.Is(dl, rpc.ErrDeadlineExceeded) {
		t.Error("DeadlineExceeded error does not match both context.DeadlineExceeded and ErrDeadlineExceeded")
	}
	if errors.Is(dl, context.Canceled) {
		t.Error("DeadlineExceeded error matches context.Canceled")
	}
	wrapped := rpc.Errorf(rpc.Unavailable, "dial: %w", errSentinel)
	if !errors.Is(wrapped, errSentinel) {
		t.Error("Errorf with %w does not unwrap to its cause")
	}
}

var errSentinel = errors.New("sentinel")

func TestCodeString(t *testing.T) {
	tests := []struct {
		c    rpc.Code
		want string
	}{
		{rpc.OK, "OK"},
		{rpc.Unauthenticated, "Unauthenticated"},
		{codeChunkStale, "ChunkStale"},
		{rpc.CodeServiceBase + 999, "Code(66535)"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("Code(%d).String() = %q, want %q", uint32(tt.c), got, tt.want)
		}
	}
}

func TestRegisterCodeRejectsReservedRange(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("RegisterCode(NotFound) did not panic")
		}
	}()
	rpc.RegisterCode(rpc.NotFound, "Mine")
}

// FromPeer tells an error the server answered with from one made on this side.
func TestFromPeer(t *testing.T) {
	ts := startServer(t, rpc.Options{})
	c := newClient(t, rpc.Options{})
	ctx := context.Background()
	_, _, err := rpc.Call[echoReq, echoResp](ctx, c, ts.addr, methodFail, &echoReq{Fail: "notfound"}, nil)
	if rpc.CodeOf(err) != rpc.NotFound || !rpc.FromPeer(err) || !rpc.FromPeer(fmt.Errorf("x: %w", err)) {
		t.Fatalf("the server's NotFound: %v, FromPeer %v", err, rpc.FromPeer(err))
	}
	ts.srv.Close()
	_, _, err = callEcho(ctx, c, ts.addr, "anyone?", nil)
	if rpc.CodeOf(err) != rpc.Unavailable || rpc.FromPeer(err) {
		t.Fatalf("a call to a closed server: %v, FromPeer %v", err, rpc.FromPeer(err))
	}
	dctx, cancel := context.WithTimeout(ctx, 0)
	defer cancel()
	if _, _, err := callEcho(dctx, c, ts.addr, "late", nil); rpc.FromPeer(err) {
		t.Fatalf("a call past its deadline: %v is from the peer", err)
	}
	if rpc.FromPeer(rpc.Errorf(rpc.Unavailable, "made here")) || rpc.FromPeer(errors.New("plain")) {
		t.Fatal("an error made on this side is from the peer")
	}
}
