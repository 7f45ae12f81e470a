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
	// code, latency by method). Servers and clients of one process may share
	// it; the collectors are shared too.
	Registerer prometheus.Registerer

	// WriteTimeout bounds one write to the socket; a peer that stops reading
	// for longer has its connection closed. Default 60s.
	WriteTimeout time.Duration

	// HandshakeTimeout bounds the hello exchange on a new connection.
	// Default 10s.
	HandshakeTimeout time.Duration

	// SocketBuffer, if positive, sets SO_SNDBUF and SO_RCVBUF. Zero leaves
	// the kernel's autotuning alone, which is usually best.
	SocketBuffer int

	// Server only.

	// MaxConcurrentPerConn bounds the handlers running for one connection;
	// when it is reached the server stops reading that connection until one
	// finishes (backpressure, not errors). Default 1024.
	MaxConcurrentPerConn int

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
