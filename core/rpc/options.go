package rpc

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Options configure a Server or a Client; each ignores the fields that are
// the other's. The zero value works: no token, default limits, no metrics.
type Options struct {
	// Token is the cluster token. A client sends it in its hello; a server
	// with a non-empty Token refuses connections that do not present it. It
	// is a shared secret, not encryption: wrap connections in TLS (Dial and
	// the listener) where the network is not trusted.
	Token string

	// Logger receives connection-level problems (refused handshakes, corrupt
	// frames, handler panics). Nil means slog.Default().
	Logger *slog.Logger

	// Limits bound the frames this side accepts; zero fields mean
	// DefaultMaxMessage and DefaultMaxPayload.
	Limits Limits

	// Registerer, if set, receives Prometheus metrics (calls by method and
	// code, latency by method; for a server also refusals by limit, open
	// connections and request bytes in flight; docs/metrics.md). Servers and
	// clients of one process may share it; the collectors are shared too.
	Registerer prometheus.Registerer

	// WriteTimeout bounds one write to the socket; a peer that stops reading
	// for longer has its connection closed. Default 60s.
	WriteTimeout time.Duration

	// HandshakeTimeout bounds the hello exchange on a new connection.
	// Default 10s.
	HandshakeTimeout time.Duration

	// Local lets a client call, and a server take calls from, the same
	// process without a socket (local.go): a client with Local calls a
	// server of its process that has Local and listens on the address
	// called in-process, with the same results. flyfs server, which runs
	// every role in one process, sets it; a cluster of processes gains
	// nothing from it.
	Local bool
	// SocketBuffer, if positive, sets SO_SNDBUF and SO_RCVBUF. Zero leaves
	// the kernel's autotuning alone, which is usually best.
	SocketBuffer int

	// Server only.

	// MaxConcurrentPerConn bounds the handlers running for one connection;
	// when it is reached the server stops reading that connection until one
	// finishes (backpressure, not errors). Default 1024.
	MaxConcurrentPerConn int

	// MaxConns bounds the connections the server holds open at once, over
	// all its listeners, counting those still in their handshake. A
	// connection beyond it is answered with an error frame,
	// ResourceExhausted naming the limit (the client's call fails with
	// that error), and closed; the connections already open are not
	// affected. Default DefaultMaxConns (4096): clients keep ConnsPerAddr
	// connections per server, so that is some two thousand client
	// processes. Negative means no limit.
	MaxConns int

	// MaxInflightBytes is the server's budget of request bytes (message
	// plus payload) held in memory. A request counts from the moment its
	// header arrives (before its buffers are allocated), while its body is
	// read and its handler runs, until its response has been written or
	// dropped (a borrowed payload goes back to the pool then; it may be the
	// response). A request that would take the total past the budget is
	// answered ResourceExhausted and not run; its body is read in small
	// pieces and dropped, never held, so the connection stays in step and
	// open. Default DefaultMaxInflightBytes (1 GiB: 16 frames of the
	// largest size, or a thousand 1 MiB chunk writes, in flight). Keep it
	// at least MaxMessage+MaxPayload, or the largest requests are always
	// refused. Negative means no limit (the bytes are still counted, see
	// Stats). Response payloads are not counted.
	MaxInflightBytes int64

	// FrameTimeout and MinFrameRate bound how long a frame may take once
	// its first byte has arrived. It must keep coming: a pause of
	// FrameTimeout (7/8 of it at the least) with none of it arriving cuts
	// it off. And it must come fast enough: all of it within FrameTimeout
	// plus its body's length at MinFrameRate bytes per second, counted from
	// when the server first waits for it. The first bound lets a stalled
	// peer go after FrameTimeout however large its frame; the second, which
	// scales with the frame so that a large transfer on a slow but working
	// link passes, stops a peer that trickles a byte now and then from
	// holding its buffer forever. A frame cut off closes its connection
	// with a DeadlineExceeded error frame and gives back its buffer and
	// budget. Defaults DefaultFrameTimeout (30s) and DefaultMinFrameRate
	// (1 MiB/s): a 64 MiB frame has 94s in all, a 1 MiB one 31s. There is
	// no deadline between frames (see IdleTimeout). Negative FrameTimeout
	// means no frame deadlines.
	FrameTimeout time.Duration
	MinFrameRate int64

	// IdleTimeout, if positive, ends connections that carry no frame and
	// no running call for that long: the server sends a go-away (the
	// client closes the connection and redials when it next calls) and
	// closes the connection if it stays idle another IdleTimeout. Zero,
	// the default, keeps idle connections open for as long as their
	// clients want, since clients pool connections; MaxConns bounds them,
	// and TCP keepalive (on for accepted connections) finds dead peers.
	IdleTimeout time.Duration

	// Client only.

	// ConnsPerAddr is how many connections a client keeps to each address;
	// calls go to the least loaded. Default 2.
	ConnsPerAddr int

	// DialTimeout bounds connecting plus the handshake. Default 5s.
	DialTimeout time.Duration

	// Dial, if set, replaces net.Dialer (for TLS or tests).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Limits = o.Limits.withDefaults()
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 60 * time.Second
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 10 * time.Second
	}
	if o.MaxConcurrentPerConn <= 0 {
		o.MaxConcurrentPerConn = 1024
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxInflightBytes == 0 {
		o.MaxInflightBytes = DefaultMaxInflightBytes
	}
	if o.FrameTimeout == 0 {
		o.FrameTimeout = DefaultFrameTimeout
	}
	if o.MinFrameRate <= 0 {
		o.MinFrameRate = DefaultMinFrameRate
	}
	if o.ConnsPerAddr <= 0 {
		o.ConnsPerAddr = 2
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	return o
}

// tuneConn applies socket options to a fresh TCP connection.
func tuneConn(c net.Conn, o *Options) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	_ = tc.SetNoDelay(true) // the writer batches; Nagle would only add latency
	if o.SocketBuffer > 0 {
		_ = tc.SetReadBuffer(o.SocketBuffer)
		_ = tc.SetWriteBuffer(o.SocketBuffer)
	}
}
