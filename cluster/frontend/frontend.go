// Package frontend starts the front ends (the S3 gateway, the admin console,
// a FUSE mount) on an in-process cluster, over its shared client. It sits
// apart from package cluster so that the front ends' own tests can run
// clusters without importing themselves.
package frontend

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/console"
	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/httpserve"
	"github.com/flyfs/flyfs/gateway"
	"github.com/flyfs/flyfs/posix/fusefs"
)

// StartGateway serves the S3 gateway at at over the front ends' shared
// client and registers it with mgmtd; cfg.FS, cfg.Logger and cfg.Registerer
// (role="gateway") default to the cluster's. It returns the address it listens on. The gateway stops at
// Close.
func StartGateway(ctx context.Context, c *cluster.Cluster, at Listen, cfg gateway.Config) (string, error) {
	if cfg.FS == nil {
		fs, err := c.FS(ctx)
		if err != nil {
			return "", err
		}
		cfg.FS = fs
	}
	if cfg.Logger == nil {
		cfg.Logger = c.Config().Logger
	}
	if cfg.Registerer == nil {
		cfg.Registerer = c.Registerer("gateway")
	}
	if err := httpserve.CheckTLS(at.TLSCert, at.TLSKey); err != nil {
		return "", fmt.Errorf("s3 gateway: %w", err)
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", at.Addr)
	if err != nil {
		gw.Close()
		return "", fmt.Errorf("s3 gateway: %w", err)
	}
	stopHTTP := serveHTTP(l, gw, at, 30*time.Second)
	rctx, stopReg := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		cfg.FS.Mgmtd().KeepRegistered(rctx, mgmtdapi.KindGateway, l.Addr().String(), l.Addr().String(), cfg.Logger)
	}()
	c.OnClose(func() {
		stopReg()
		<-done
		stopHTTP()
		gw.Close()
	})
	return l.Addr().String(), nil
}

// StartConsole serves the admin console at at (Secure cookies with TLS); cfg.FS, cfg.Mgmtd,
// cfg.Token, cfg.Advertise and cfg.Logger default to the cluster's. It
// returns the address it listens on. The console stops at Close.
func StartConsole(ctx context.Context, c *cluster.Cluster, at Listen, cfg console.Config) (string, error) {
	if cfg.FS == nil {
		fs, err := c.FS(ctx)
		if err != nil {
			return "", err
		}
		cfg.FS = fs
	}
	if len(cfg.Mgmtd) == 0 {
		cfg.Mgmtd = c.MgmtdAddrs()
		cfg.Token = c.Config().Token
	}
	if cfg.Logger == nil {
		cfg.Logger = c.Config().Logger
	}
	if err := httpserve.CheckTLS(at.TLSCert, at.TLSKey); err != nil {
		return "", fmt.Errorf("console: %w", err)
	}
	cfg.SecureCookies = cfg.SecureCookies || at.TLSCert != ""
	l, err := net.Listen("tcp", at.Addr)
	if err != nil {
		return "", fmt.Errorf("console: %w", err)
	}
	if cfg.Advertise == "" {
		cfg.Advertise = l.Addr().String()
	}
	con, err := console.New(cfg)
	if err != nil {
		l.Close()
		return "", err
	}
	stopHTTP := serveHTTP(l, con, at, 5*time.Second)
	c.OnClose(func() {
		stopHTTP()
		con.Close()
	})
	return l.Addr().String(), nil
}

// Mount mounts the namespace at dir with FUSE over the front ends' shared
// client; opts.Capacity, opts.Log and opts.Registerer (role="mount") default
// to the cluster's. It is unmounted (flushing what is in flight) at Close,
// before any service stops.
func Mount(ctx context.Context, c *cluster.Cluster, dir string, opts fusefs.Options) (*fusefs.Mounted, error) {
	fs, err := c.FS(ctx)
	if err != nil {
		return nil, err
	}
	if opts.Capacity == nil {
		opts.Capacity = fusefs.MgmtdCapacity(fs.Mgmtd())
	}
	if opts.Log == nil {
		opts.Log = c.Config().Logger
	}
	if opts.Registerer == nil {
		opts.Registerer = c.Registerer("mount")
	}
	m, err := fusefs.Mount(ctx, fs, dir, opts)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	c.OnClose(func() { m.Unmount() })
	return m, nil
}

// Listen says where and how a front end serves HTTP: its address, TLS when
// a certificate and key are given, and the bounds on its connections.
type Listen struct {
	Addr            string
	TLSCert, TLSKey string
	Limits          httpserve.Limits
}

// serveHTTP serves h on l until the returned stop, which waits up to grace
// for requests in flight.
func serveHTTP(l net.Listener, h http.Handler, at Listen, grace time.Duration) (stop func()) {
	srv := httpserve.New(h, at.Limits)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := httpserve.Serve(srv, l, at.TLSCert, at.TLSKey); err != nil {
			l.Close()
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}
}
