package main

import (
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/flyfs/flyfs/core/observe"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
)

// observeOptions are the flags every role has for being observed: its
// metrics and profiles endpoints and its log.
type observeOptions struct {
	metricsAddr, pprofAddr string
	logLevel, logFormat    string
}

func addObserveFlags(f *pflag.FlagSet, o *observeOptions) {
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (host:port; :9500 is every interface; empty: no metrics)")
	f.StringVar(&o.pprofAddr, "pprof-addr", "", "serve Go profiles at http://ADDR/debug/pprof/ (a port alone, :6060, listens on loopback only; empty: off)")
	f.StringVar(&o.logLevel, "log-level", "info", "least level logged: debug, info, warn or error")
	f.StringVar(&o.logFormat, "log-format", "text", "log as text (key=value) or json (one object a line)")
}

// logger builds the role's logger on w (stderr) and makes it slog's default,
// so libraries that log through slog.Default follow the flags too.
func (o observeOptions) logger(w io.Writer) (*slog.Logger, error) {
	log, err := observe.NewLogger(w, o.logLevel, o.logFormat)
	if err != nil {
		return nil, fmt.Errorf("--log-level/--log-format: %w", err)
	}
	slog.SetDefault(log)
	return log, nil
}

// observed is a role's metrics registry and endpoints. Its zero value (and
// nil) means metrics off.
type observed struct {
	reg     *prometheus.Registry // nil: no metrics
	mu      sync.Mutex
	servers []*observe.Server
}

// start makes the registry (with --metrics-addr) and serves the profiles
// (with --pprof-addr). Serve the metrics with serve once the role is built.
func (o observeOptions) start(log *slog.Logger) (*observed, error) {
	obs := &observed{}
	if o.metricsAddr != "" {
		obs.reg = observe.NewRegistry()
	}
	if o.pprofAddr != "" {
		srv, err := observe.ServePprof(o.pprofAddr, log)
		if err != nil {
			return nil, fmt.Errorf("--pprof-addr: %w", err)
		}
		obs.servers = append(obs.servers, srv)
		log.Info("profiles served", "url", "http://"+srv.Addr()+"/debug/pprof/")
	}
	return obs, nil
}

// role is where role's metrics go: the registry labelled role=<role>, or
// nil without --metrics-addr.
func (obs *observed) role(role string) prometheus.Registerer {
	if obs == nil || obs.reg == nil {
		return nil
	}
	return observe.Role(obs.reg, role)
}

// serve serves g (default: the registry) at --metrics-addr and returns the
// endpoint's URL ("" with metrics off).
func (obs *observed) serve(o observeOptions, g prometheus.Gatherer, log *slog.Logger) (string, error) {
	if obs == nil || obs.reg == nil {
		return "", nil
	}
	if g == nil {
		g = obs.reg
	}
	srv, err := observe.ServeMetrics(o.metricsAddr, g, log)
	if err != nil {
		return "", fmt.Errorf("--metrics-addr: %w", err)
	}
	obs.mu.Lock()
	obs.servers = append(obs.servers, srv)
	obs.mu.Unlock()
	return "http://" + srv.Addr() + "/metrics", nil
}

// close stops the endpoints.
func (obs *observed) close() {
	if obs == nil {
		return
	}
	obs.mu.Lock()
	servers := obs.servers
	obs.servers = nil
	obs.mu.Unlock()
	for _, s := range servers {
		s.Close()
	}
}
