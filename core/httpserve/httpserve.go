// Package httpserve builds the front ends' HTTP servers with bounds that a
// client on the network cannot sit through: a deadline on the request line
// and headers, a body that must keep arriving at a minimum rate, a response
// the client must keep taking, and idle keep-alive connections that end.
// Every stall ends in a closed connection, not in a goroutine and a file
// descriptor held for good.
package httpserve

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Limits bound one server's connections. Zero fields take the defaults
// named beside them.
type Limits struct {
	// HeaderTimeout bounds reading a request's line and headers (30 s).
	HeaderTimeout time.Duration
	// StallTimeout bounds any wait for the next bytes of a request body or
	// for the client to take more of the response (60 s).
	StallTimeout time.Duration
	// MinBodyRate is the least average rate of a request body, in bytes per
	// second, after the first StallTimeout (1 KiB/s).
	MinBodyRate int64
	// IdleTimeout ends a keep-alive connection with no request (120 s).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (1 MiB).
	MaxHeaderBytes int
}

func (l Limits) withDefaults() Limits {
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = 30 * time.Second
	}
	if l.StallTimeout <= 0 {
		l.StallTimeout = 60 * time.Second
	}
	if l.MinBodyRate <= 0 {
		l.MinBodyRate = 1 << 10
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 120 * time.Second
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 1 << 20
	}
	return l
}

// New returns a server for h with the limits applied.
func New(h http.Handler, l Limits) *http.Server {
	l = l.withDefaults()
	return &http.Server{
		Handler:           bounded(h, l),
		ReadHeaderTimeout: l.HeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// Serve serves srv on l, with TLS when certFile and keyFile are given,
// until Shutdown or Close.
func Serve(srv *http.Server, l net.Listener, certFile, keyFile string) error {
	var err error
	if certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return errors.New("give both a TLS certificate and its key, or neither")
		}
		if srv.TLSConfig == nil {
			srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		err = srv.ServeTLS(l, certFile, keyFile)
	} else {
		err = srv.Serve(l)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// CheckTLS reports whether a certificate and key pair loads, so a role can
// refuse to start on a bad one instead of failing every handshake.
func CheckTLS(certFile, keyFile string) error {
	if certFile == "" && keyFile == "" {
		return nil
	}
	if certFile == "" || keyFile == "" {
		return errors.New("give both --tls-cert and --tls-key, or neither")
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	return nil
}

// bounded sets the connection's deadlines as the request's body and the
// response move: each read or write extends them by StallTimeout.
func bounded(h http.Handler, l Limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		now := time.Now()
		_ = rc.SetReadDeadline(now.Add(l.StallTimeout))
		_ = rc.SetWriteDeadline(now.Add(l.StallTimeout))
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &rateBody{ReadCloser: r.Body, rc: rc, l: l, start: now}
		}
		h.ServeHTTP(&movingWriter{ResponseWriter: w, rc: rc, stall: l.StallTimeout}, r)
	})
}

// errTooSlow ends a body that arrives slower than the minimum rate.
var errTooSlow = errors.New("request body arrives too slowly")

// rateBody extends the read deadline as bytes arrive and refuses a body
// whose average rate falls under the minimum once the grace is over.
type rateBody struct {
	io.ReadCloser
	rc    *http.ResponseController
	l     Limits
	start time.Time
	n     int64
}

func (b *rateBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if n > 0 {
		now := time.Now()
		if el := now.Sub(b.start); el > b.l.StallTimeout && float64(b.n)/el.Seconds() < float64(b.l.MinBodyRate) {
			return n, errTooSlow
		}
		_ = b.rc.SetReadDeadline(now.Add(b.l.StallTimeout))
	}
	return n, err
}

// movingWriter extends the write deadline before every write, so a response
// the client keeps taking never times out and one it stops taking does.
type movingWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
}

func (w *movingWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.stall))
	return w.ResponseWriter.Write(p)
}

func (w *movingWriter) Flush() { _ = w.rc.Flush() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *movingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
