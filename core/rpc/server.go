package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrServerClosed is returned by Serve after Close or Shutdown.
var ErrServerClosed = errors.New("rpc: server closed")

// Server serves registered methods on any number of listeners. Each
// connection starts with a hello carrying the cluster token, then carries
// many concurrent calls: every request runs in its own goroutine (at most
// MaxConcurrentPerConn per connection) and responses go back in completion
// order, matched by request id.
//
// A connection that breaks the protocol (corrupt or oversized frame, unknown
// frame kind, wrong token) is closed with a logged reason; other connections
// are not affected. Nothing a peer sends can panic the server, and a handler
// panic becomes an Internal error for that call.
//
// What peers can make a server hold is bounded (see doc.go and Options):
// connections by MaxConns, request bytes in memory by MaxInflightBytes, the
// time a started frame may take by FrameTimeout and MinFrameRate, and
// optionally idle connections by IdleTimeout.
type Server struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics

	handlers atomic.Pointer[map[Method]*handler] // copy on write

	budget    budget       // request bytes held, against MaxInflightBytes
	refusing  atomic.Int32 // connections being refused for MaxConns
	refuseWG  sync.WaitGroup
	logConns  logLimiter // MaxConns refusals
	logBudget logLimiter // MaxInflightBytes refusals

	mu        sync.Mutex
	regMu     sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*serverConn]struct{}
	connWG    sync.WaitGroup

	// Calls taken in-process (local.go), with their cancels; under mu.
	localCalls    map[uint64]context.CancelFunc
	localSeq      uint64
	localWG       sync.WaitGroup
	localStop     chan struct{} // closed by Close
	localStopOnce sync.Once
}

// NewServer returns a server with no methods; add them with Handle.
func NewServer(opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{
		opts:      opts,
		log:       opts.Logger.With("component", "rpc.server"),
		metrics:   newMetrics(opts.Registerer, "server"),
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*serverConn]struct{}),
		budget:    budget{max: opts.MaxInflightBytes},
		localStop: make(chan struct{}),
	}
	if lim := opts.Limits; opts.MaxInflightBytes >= 0 && opts.MaxInflightBytes < int64(lim.MaxMessage)+int64(lim.MaxPayload) {
		s.log.Warn("MaxInflightBytes is below the largest request a client may send; such requests will always be refused",
			"max_inflight_bytes", opts.MaxInflightBytes, "max_message", lim.MaxMessage, "max_payload", lim.MaxPayload)
	}
	empty := map[Method]*handler{}
	s.handlers.Store(&empty)
	s.metrics.track(s)
	return s
}

func (s *Server) register(h *handler) error {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	old := *s.handlers.Load()
	if _, dup := old[h.method]; dup {
		return fmt.Errorf("method %s registered twice", h.method)
	}
	next := make(map[Method]*handler, len(old)+1)
	for m, oh := range old {
		next[m] = oh
	}
	next[h.method] = h
	s.handlers.Store(&next)
	return nil
}

func (s *Server) lookup(m Method) *handler {
	return (*s.handlers.Load())[m]
}

// Serve accepts connections on l until l fails or the server is closed, and
// serves each in its own goroutines. It returns ErrServerClosed after Close
// or Shutdown, and closes l.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	addr := l.Addr().String()
	s.serveLocal(addr)
	defer func() {
		s.unserveLocal(addr)
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.Close()
	}()

	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of file descriptors and the like: wait and retry rather
			// than give up serving.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed; retrying", "addr", l.Addr().String(), "err", err, "backoff", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		tuneConn(c, &s.opts)
		if sc, full := s.newConn(c); sc != nil {
			go sc.serve()
		} else if full {
			go func() {
				defer s.refuseWG.Done()
				s.refuseConn(c, s.opts.MaxConns)
			}()
		}
	}
}

// ServeConn serves one established connection (from a custom listener or a
// test pipe) and returns when it is closed.
func (s *Server) ServeConn(c net.Conn) {
	if sc, full := s.newConn(c); sc != nil {
		sc.serve()
	} else if full {
		defer s.refuseWG.Done()
		s.refuseConn(c, s.opts.MaxConns)
	}
}

// newConn tracks a new connection. It returns nil and closes c if the server
// is closed; it returns nil and full if the server holds MaxConns
// connections already, and then the caller refuses c (see refuseConn) and
// calls refuseWG.Done.
func (s *Server) newConn(c net.Conn) (sc *serverConn, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return nil, false
	}
	if limit := s.opts.MaxConns; limit > 0 && len(s.conns) >= limit {
		s.refuseWG.Add(1)
		return nil, true
	}
	sc = newServerConn(s, c)
	s.conns[sc] = struct{}{}
	s.connWG.Add(1)
	return sc, false
}

func (s *Server) connDone(sc *serverConn) {
	s.mu.Lock()
	delete(s.conns, sc)
	s.mu.Unlock()
	s.connWG.Done()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// stopAccepting marks the server closed, closes its listeners and returns
// the live connections.
func (s *Server) stopAccepting() []*serverConn {
	s.metrics.untrack(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	conns := make([]*serverConn, 0, len(s.conns))
	for sc := range s.conns {
		conns = append(conns, sc)
	}
	return conns
}

// Close stops the listeners, closes every connection and cancels every
// running handler's context, then waits for the handlers to return (so a
// handler that ignores its context delays Close). Calls in flight fail on
// their clients with Unavailable.
func (s *Server) Close() error {
	for _, sc := range s.stopAccepting() {
		sc.close(ErrServerClosed)
	}
	s.stopLocal()
	s.connWG.Wait()
	s.refuseWG.Wait() // at most refuseLinger
	return nil
}

// Shutdown stops the listeners and tells every client to go away: clients
// send no new calls on these connections (they redial, and reach another
// server or fail with Unavailable), and close each connection once its calls
// have been answered. Shutdown returns when all connections are closed, or
// when ctx ends, in which case it falls back to Close and returns ctx's
// error.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, sc := range s.stopAccepting() {
		sc.goAway()
	}
	done := make(chan struct{})
	go func() {
		s.connWG.Wait()
		s.localWG.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	}
}
