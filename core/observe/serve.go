package observe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is an HTTP endpoint served in the background.
type Server struct {
	srv  *http.Server
	addr string
	done chan struct{}
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.addr }

// Close stops the server, waiting a moment for requests in flight.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}

// MetricsHandler serves g in the standard exposition formats (text, or
// protobuf/OpenMetrics when the scraper asks for them).
func MetricsHandler(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      slogPrinter{log},
		ErrorHandling: promhttp.ContinueOnError, // one bad collector does not hide the rest
	})
}

// ServeMetrics serves g at /metrics on addr (host:port; an empty host is
// every interface, as a scraper is usually elsewhere).
func ServeMetrics(addr string, g prometheus.Gatherer, log *slog.Logger) (*Server, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", MetricsHandler(g, log))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "flyfs: metrics at /metrics")
	})
	return serve("metrics", addr, mux, log)
}

// PprofAddr is where --pprof-addr listens: an address without a host (":6060")
// on loopback only; a host given (0.0.0.0:6060) as given.
func PprofAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// ServePprof serves net/http/pprof's profiles under /debug/pprof/ on addr
// (see PprofAddr).
func ServePprof(addr string, log *slog.Logger) (*Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return serve("pprof", PprofAddr(addr), mux, log)
}

func serve(what, addr string, h http.Handler, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	s := &Server{
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)},
		addr: l.Addr().String(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(what+" endpoint stopped", "addr", s.addr, "err", err)
		}
	}()
	return s, nil
}

// slogPrinter is promhttp's error log on a slog.Logger.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) {
	if p.log != nil {
		p.log.Warn("metrics: " + fmt.Sprint(v...))
	}
}
