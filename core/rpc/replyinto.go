package rpc

import (
	"context"
	"sync/atomic"
)

// Reply memory. A caller that already holds the memory a response payload
// is bound for (a FUSE read's reply buffer) may offer it with ReplyInto. A
// handler that builds its payload in one buffer asks with ReplyBuffer: on an
// in-process call it gets the offered memory, and the caller is spared the
// copy out of a pooled buffer into its own (1 MiB per sequential read). Over
// a connection nothing changes: contexts do not travel, the server's
// handler gets a pooled buffer, and the client copies as before.
//
// The offer is taken at most once, by the first ReplyBuffer under the
// context (a handler's nested local calls share its context). The caller
// must keep the memory to itself until the call returns, and make the call
// where it cannot outlive that: on its own goroutine, never in a race
// whose loser runs on (see WithoutReplyInto). Whether the answer landed in
// the offer is for the caller to check (InMemory): the handler may have
// declined it, or been reached over a connection.

type replyKey struct{}

type replyOffer struct {
	buf   []byte
	taken atomic.Bool
}

// ReplyInto offers buf as the memory of the response payload of a call
// made under the returned context.
func ReplyInto(ctx context.Context, buf []byte) context.Context {
	if len(buf) == 0 {
		return ctx
	}
	return context.WithValue(ctx, replyKey{}, &replyOffer{buf: buf})
}

// WithoutReplyInto withdraws any offer of ctx, for calls that may go on
// after their caller has returned.
func WithoutReplyInto(ctx context.Context) context.Context {
	if ctx.Value(replyKey{}) == nil {
		return ctx
	}
	return context.WithValue(ctx, replyKey{}, (*replyOffer)(nil))
}

// ReplyBuffer returns n bytes for a handler registered with PooledResponse
// to fill and return as its payload: the memory offered under ctx if it is
// large enough and not yet taken, else a pooled buffer (PayloadBuffer).
func ReplyBuffer(ctx context.Context, n int) []byte {
	if o, _ := ctx.Value(replyKey{}).(*replyOffer); o != nil && n > 0 && len(o.buf) >= n && o.taken.CompareAndSwap(false, true) {
		return o.buf[:n:n]
	}
	return PayloadBuffer(n)
}

// InMemory reports whether payload lies at the start of mem: a handler
// answered in memory offered with ReplyInto. Such a payload is the
// caller's own; it must not go to ReleasePayload.
func InMemory(payload, mem []byte) bool {
	return len(payload) > 0 && len(mem) > 0 && &payload[0] == &mem[0]
}
