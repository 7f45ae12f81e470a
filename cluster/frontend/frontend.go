// Package frontend starts the front ends (the S3 gateway, the admin console,
// a FUSE mount) on an in-process cluster, over its shared client. It sits
// apart from package cluster so that the front ends' own tests can run
// clusters without importing themselves.
package frontend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/console"
	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/gateway"
	"github.com/flyfs/flyfs/posix/fusefs"
)

// StartGateway serves the S3 gateway on addr over the front ends' shared
// client and registers it with mgmtd; cfg.FS and cfg.Logger default to the
// cluster's. It returns the address it listens on. The gateway stops at
// Close.
func StartGateway(ctx context.Context, c *cluster.Cluster, addr string, cfg gateway.Config) (string, error) {
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
	gw, err := gateway.New(cfg)
	if err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		gw.Close()
		return "", fmt.Errorf("s3 gateway: %w", err)
	}
	stopHTTP := serveHTTP(l, gw, 30*time.Second)
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

// StartConsole serves the admin console on addr; cfg.FS, cfg.Mgmtd,
// cfg.Token, cfg.Advertise and cfg.Logger default to the cluster's. It
// returns the address it listens on. The console stops at Close.
func StartConsole(ctx context.Context, c *cluster.Cluster, addr string, cfg console.Config) (string, error) {
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
	l, err := net.Listen("tcp", addr)
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
	stopHTTP := serveHTTP(l, con, 5*time.Second)
	c.OnClose(func() {
		stopHTTP()
		con.Close()
	})
	return l.Addr().String(), nil
}

// Mount mounts the namespace at dir with FUSE over the front ends' shared
// client; opts.Capacity and opts.Log default to the cluster's. It is
// unmounted (flushing what is in flight) at Close, before any service stops.
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
	m, err := fusefs.Mount(ctx, fs, dir, opts)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	c.OnClose(func() { m.Unmount() })
	return m, nil
}

// serveHTTP serves h on l until the returned stop, which waits up to grace
// for requests in flight.
func serveHTTP(l net.Listener, h http.Handler, grace time.Duration) (stop func()) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
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
