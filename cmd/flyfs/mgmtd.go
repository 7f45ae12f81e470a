package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/kv/kvopen"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/mgmtd"
	"github.com/spf13/cobra"
)

// mgmtdOptions are the settings of `flyfs mgmtd`.
type mgmtdOptions struct {
	id, listen, advertise, dataDir string
	tok                            tokenOptions
	rpc                            rpc.Options // server bounds
	heartbeatTimeout, lease        time.Duration
	kv                             kvopen.Config
	obs                            observeOptions
}

func mgmtdCmd() *cobra.Command {
	var o mgmtdOptions
	cmd := &cobra.Command{
		Use:   "mgmtd",
		Short: "Run the cluster manager: membership, leases, chain tables, target states",
		Long: `Run a cluster manager. Run several against one shared KV store (--kv etcd) and
they elect a primary through a lease in the store: the primary takes the storage
services' heartbeats, declares a service silent for --heartbeat-timeout failed,
and moves its targets along their chains; every mgmtd serves routing. A dead
primary is replaced within 4/3 of the lease (--lease, default a quarter of the
heartbeat timeout, so a failover takes at most a third of it).

With --kv pebble (the default) the state lives under --data; Pebble is a
single-process store, so a pebble mgmtd runs alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log, err := o.obs.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return runMgmtd(ctx, o, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.id, "id", "", "this mgmtd's unique id (default: its advertised address)")
	f.StringVar(&o.listen, "listen", "127.0.0.1:9000", "address to serve RPCs on")
	f.StringVar(&o.advertise, "advertise", "", "address peers and clients reach this mgmtd at (default: the listen address, with the host name for an unspecified host)")
	f.StringVar(&o.dataDir, "data", "flyfs-mgmtd", "pebble: directory of the KV store")
	addTokenFlags(f, &o.tok)
	addRPCFlags(f, &o.rpc)
	f.DurationVar(&o.heartbeatTimeout, "heartbeat-timeout", 6*time.Second, "T: a storage service silent this long is declared failed")
	f.DurationVar(&o.lease, "lease", 0, "primary lease length (default: heartbeat timeout / 4)")
	addKVFlags(f, &o.kv)
	addObserveFlags(f, &o.obs)
	return cmd
}

// runMgmtd runs a cluster manager until ctx ends.
func runMgmtd(ctx context.Context, o mgmtdOptions, log *slog.Logger) error {
	token, err := o.tok.resolve("flyfs mgmtd", log)
	if err != nil {
		return err
	}
	obs, err := o.obs.start(log)
	if err != nil {
		return err
	}
	defer obs.close()
	if o.kv.Engine == "" || o.kv.Engine == "pebble" {
		o.kv.Dir = o.dataDir
		if err := privateState(o.kv.Dir); err != nil {
			return err
		}
	}
	db, err := kvopen.Open(ctx, o.kv)
	if err != nil {
		return err
	}
	defer db.Close()
	l, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	addr, err := mgmtdAdvertised(o.advertise, l.Addr())
	if err != nil {
		l.Close()
		return err
	}
	if o.id == "" {
		o.id = addr
	}
	srv, err := mgmtd.New(mgmtd.Config{ID: o.id, Addr: addr, KV: db, HeartbeatTimeout: o.heartbeatTimeout,
		LeaseLength: o.lease, RPC: withLimits(rpc.Options{Token: token, Logger: log, Registerer: obs.role("mgmtd")}, o.rpc), Logger: log,
		Registerer: obs.role("mgmtd")})
	if err != nil {
		l.Close()
		return err
	}
	metricsURL, err := obs.serve(o.obs, nil, log)
	if err != nil {
		srv.Close()
		l.Close()
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	cluster, fresh := srv.ClusterID()
	log.Info("mgmtd up", "id", o.id, "listen", l.Addr().String(), "advertise", addr, "kv", o.kv.Engine,
		"heartbeat_timeout", o.heartbeatTimeout, "cluster", cluster, "new_cluster", fresh, "metrics", metricsURL)
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-served:
	}
	if cerr := srv.Close(); cerr != nil {
		log.Warn("giving up the lease failed; peers wait for it to expire", "err", cerr)
	}
	if err != nil && !errors.Is(err, rpc.ErrServerClosed) {
		return err
	}
	return nil
}

// mgmtdAdvertised picks the address to advertise: the flag, or the listener's
// address with the host name in place of an unspecified host.
func mgmtdAdvertised(flag string, la net.Addr) (string, error) {
	if flag != "" {
		return flag, nil
	}
	host, port, err := net.SplitHostPort(la.String())
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
		return la.String(), nil
	}
	name, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("listening on %s: cannot tell peers where (set --advertise): %w", la, err)
	}
	return net.JoinHostPort(name, port), nil
}
