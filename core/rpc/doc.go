// Package rpc is the internal RPC layer every flyfs service uses: typed
// requests and responses, bulk payloads beside them, multiplexed connections
// authenticated by a cluster token, and errors whose codes survive the wire.
//
// A service defines method ids, message structs and handlers:
//
//	const MethodWrite rpc.Method = 0x0301
//
//	func init() { rpc.RegisterMethod(MethodWrite, "storage.Write") }
//
//	type WriteReq struct {
//		Chunk  uint64 `cbor:"1,keyasint,omitempty"`
//		Offset uint32 `cbor:"2,keyasint,omitempty"`
//	}
//	type WriteResp struct {
//		Version uint32 `cbor:"1,keyasint,omitempty"`
//	}
//
//	srv := rpc.NewServer(rpc.Options{Token: token, Logger: log})
//	rpc.Handle(srv, MethodWrite, func(ctx context.Context, req *WriteReq, data []byte) (*WriteResp, []byte, error) {
//		...
//		return &WriteResp{Version: v}, nil, nil
//	})
//	go srv.Serve(listener)
//
//	cl := rpc.NewClient(rpc.Options{Token: token})
//	resp, _, err := rpc.Call[WriteReq, WriteResp](ctx, cl, addr, MethodWrite, &WriteReq{Chunk: 7}, data)
//	if errors.Is(err, rpc.ErrUnavailable) { ... try another replica ... }
//
// Messages are CBOR with integer keys so they can evolve (see codec.go for
// the rules). Payloads are raw bytes next to the message in the frame (see
// frame.go for the wire format): they are never encoded, and a large payload
// is written from the caller's buffer with writev and read straight into the
// receiver's buffer.
//
// Ownership: a request payload belongs to the caller again when Call
// returns; a payload received (by a handler, or returned by Call) is a
// buffer the receiver owns; a response payload returned by a handler must
// not be modified after the handler returns. Large received payloads come
// from a buffer pool, and recycling them is opt-in: register a handler with
// BorrowPayload when it does not keep its request payload (storage writes),
// and call ReleasePayload on a response payload you are done with. Fresh
// memory costs zeroing, page faults and GC work, so on the bulk data path
// this roughly doubles throughput (flyfs bench rpc measures it).
//
// Deadlines and cancellation: the caller's context deadline is sent with the
// request as a relative timeout and bounds the handler's context; when the
// caller's context ends first, Call returns DeadlineExceeded or Canceled at
// once and sends a cancel frame that cancels the handler's context.
//
// Resource limits: a server bounds what its peers can make it hold, each
// bound an Options field with a default meant for production:
//   - MaxConns (4096) open connections; one more is answered with an error
//     frame, ResourceExhausted naming the limit, and closed, and the client's
//     call fails with that error.
//   - MaxInflightBytes (1 GiB) of request bytes in memory, counted from a
//     request's header until its response is written; a request beyond it is
//     answered ResourceExhausted, its body read and dropped without being
//     held, and the connection carries on.
//   - FrameTimeout (30s) and MinFrameRate (1 MiB/s): once a frame has begun
//     to arrive, it must not stall for FrameTimeout, and must be in within
//     FrameTimeout plus its size at MinFrameRate (94s for 64 MiB); a frame
//     that misses either closes the connection with a DeadlineExceeded
//     error frame and frees what it held.
//   - IdleTimeout (off): a connection with no frame and no running call for
//     that long is sent a go-away, then closed. Off by default because
//     clients keep pooled connections open between calls.
//
// Together with the frame Limits (MaxMessage, MaxPayload), HandshakeTimeout,
// WriteTimeout and MaxConcurrentPerConn, they let a peer that misbehaves cost
// the server a bounded amount of memory and time, and others go on being
// served. Server.Stats reports the connections and bytes held.
//
// In-process calls: a client and a server of one process that both set
// Options.Local skip the socket for calls to the server's listening address
// (local.go), with the same answers, errors, limits and metrics; flyfs
// server, which runs every role in one process, uses it.
//
// Retries are the caller's business: only the caller knows whether a method
// is idempotent. The package moves a call to another connection only when it
// certainly was not sent.
package rpc
