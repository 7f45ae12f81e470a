package rpc

import (
	"context"
	"fmt"
)

// HandlerFunc serves one method. req is decoded from the request message
// (fields the sender did not set are zero; a nil req is never passed).
// payload is the request's raw payload, owned by the handler, which may keep
// it, unless the method was registered with BorrowPayload. The handler returns a response (nil sends an
// empty message, which decodes as the zero value) and optionally a response
// payload, which the server sends without copying: the handler must not
// modify it after returning. A non-nil error is sent instead of both; its
// Code (CodeOf) and text reach the caller.
//
// ctx is canceled when the caller cancels or its deadline passes, when the
// connection breaks, or when the server is closed.
type HandlerFunc[Req, Resp any] func(ctx context.Context, req *Req, payload []byte) (*Resp, []byte, error)

// handler is the untyped form every method is stored as: decode turns the
// request message into a *Req, call runs the handler and encodes its
// response.
type handler struct {
	method Method
	borrow bool // the handler does not keep the request payload
	pooled bool // the response payload came from PayloadBuffer: pool it once written
	deep   bool // the handler's goroutine starts with a grown stack (stack.go)
	decode func(msg []byte) (any, error)
	call   func(ctx context.Context, req any, payload []byte) (respMsg, respPayload []byte, err error)
	// run and encode are call in two: the handler, and the encoding of its
	// response, which an in-process call does on the caller's stack.
	run    func(ctx context.Context, req any, payload []byte) (resp any, respPayload []byte, err error)
	encode func(resp any) ([]byte, error)
}

// HandleOption adjusts how a method is served.
type HandleOption func(*handler)

// BorrowPayload declares that the handler does not keep the request payload,
// nor any slice of it, once it returns (other than as its response payload),
// and does not change its bytes: it writes them somewhere, forwards them
// with a Call, or copies what it needs. The server then recycles the
// payload's buffer after the response is sent, which spares large requests
// an allocation, zeroing and page faults (see bufpool.go), and a caller in
// the same process (Options.Local) lends its own buffer, uncopied. Storage
// write paths want this; a handler that stores the slice itself, or writes
// into it, must not use it.
func BorrowPayload() HandleOption {
	return func(h *handler) { h.borrow = true }
}

// PooledResponse says the handler's response payloads come from
// PayloadBuffer and are not kept: the server returns each to the pool once it
// is written, so large responses do not allocate per call.
func PooledResponse() HandleOption {
	return func(h *handler) { h.pooled = true }
}

// DeepStack says the handler runs deep (a KV transaction through Pebble's
// iterators, CBOR): its goroutine grows its stack once before it starts,
// which is cheaper than growing it step by step at that depth (stack.go).
func DeepStack() HandleOption {
	return func(h *handler) { h.deep = true }
}

// Handle registers fn as the server's handler for method. Register before
// Serve; registering a method twice is a programming error and panics.
func Handle[Req, Resp any](s *Server, method Method, fn HandlerFunc[Req, Resp], opts ...HandleOption) {
	h := &handler{
		method: method,
		decode: func(msg []byte) (any, error) {
			req := new(Req)
			if err := unmarshal(msg, req); err != nil {
				return nil, Errorf(InvalidArgument, "%s: %v", method, err)
			}
			return req, nil
		},
		run: func(ctx context.Context, req any, payload []byte) (any, []byte, error) {
			resp, out, err := fn(ctx, req.(*Req), payload)
			if err != nil {
				return nil, nil, err
			}
			return resp, out, nil
		},
		encode: func(resp any) ([]byte, error) {
			b, err := marshal(resp.(*Resp))
			if err != nil {
				return nil, Errorf(Internal, "%s: encode response: %v", method, err)
			}
			return b, nil
		},
	}
	h.call = func(ctx context.Context, req any, payload []byte) ([]byte, []byte, error) {
		resp, out, err := h.run(ctx, req, payload)
		if err != nil {
			return nil, nil, err
		}
		b, err := h.encode(resp)
		if err != nil {
			return nil, nil, err
		}
		return b, out, nil
	}
	for _, o := range opts {
		o(h)
	}
	if err := s.register(h); err != nil {
		panic(fmt.Sprintf("rpc: Handle: %v", err))
	}
}
