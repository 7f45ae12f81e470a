package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/embed"
)

// etcdOptions are the settings of `flyfs etcd`.
type etcdOptions struct {
	name, dataDir, listenPeer, listenClient string
	advertisePeer, advertiseClient          string
	initialCluster, clusterToken, state     string
	logLevel                                string
	quotaBytes                              int64
}

// etcdCmd runs one member of an etcd cluster in this process (etcd's embed
// package), so tests and trials can run a multi-member etcd as several flyfs
// processes, without an etcd installed. A production cluster runs a real
// etcd with the limits docs/deploy.md gives.
func etcdCmd() *cobra.Command {
	var o etcdOptions
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Run a bundled etcd member, to try a multi-process cluster (production runs a real etcd)",
		Long: `Run one member of an etcd cluster inside this process, with the limits flyfs's
large transactions need (max-txn-ops, max-request-bytes) raised. For tests and
trials; run a real etcd in production.

Example, member 1 of 3:
  flyfs etcd --name e1 --data /var/lib/e1 --listen-peer http://10.0.0.1:2380 \
    --listen-client http://10.0.0.1:2379 \
    --initial-cluster e1=http://10.0.0.1:2380,e2=http://10.0.0.2:2380,e3=http://10.0.0.3:2380`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			cfg, err := o.config()
			if err != nil {
				return err
			}
			e, err := embed.StartEtcd(cfg)
			if err != nil {
				return fmt.Errorf("start etcd: %w", err)
			}
			defer e.Close()
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			select {
			case <-e.Server.ReadyNotify():
				fmt.Fprintf(cmd.OutOrStdout(), "etcd member %s ready: clients %s, peers %s\n", o.name, o.listenClient, o.listenPeer)
			case err := <-e.Err():
				return fmt.Errorf("etcd: %w", err)
			case <-sig:
				return nil
			}
			select {
			case err := <-e.Err():
				return fmt.Errorf("etcd: %w", err)
			case <-e.Server.StopNotify():
				return errors.New("etcd: the server stopped")
			case <-sig:
				return nil
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", "default", "this member's name, as in --initial-cluster")
	f.StringVar(&o.dataDir, "data", "flyfs-etcd", "directory of this member's data")
	f.StringVar(&o.listenPeer, "listen-peer", "http://127.0.0.1:2380", "URL to serve peers on")
	f.StringVar(&o.listenClient, "listen-client", "http://127.0.0.1:2379", "URL to serve clients on")
	f.StringVar(&o.advertisePeer, "advertise-peer", "", "peer URL others reach this member at (default: --listen-peer)")
	f.StringVar(&o.advertiseClient, "advertise-client", "", "client URL to advertise (default: --listen-client)")
	f.StringVar(&o.initialCluster, "initial-cluster", "", "every member as NAME=PEER-URL, comma-separated (default: this member alone)")
	f.StringVar(&o.clusterToken, "initial-cluster-token", "flyfs-etcd", "token that keeps separate clusters from joining each other")
	f.StringVar(&o.state, "initial-cluster-state", "new", "new (bootstrap) or existing (join a running cluster)")
	f.StringVar(&o.logLevel, "log-level", "warn", "etcd's log level: debug, info, warn, error")
	f.Int64Var(&o.quotaBytes, "quota-bytes", 2<<30, "backend database quota in bytes")
	return cmd
}

// config turns the flags into etcd's configuration, checking the URLs.
func (o etcdOptions) config() (*embed.Config, error) {
	parse := func(flag, s string) (url.URL, error) {
		u, err := url.Parse(s)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return url.URL{}, fmt.Errorf("--%s %q: want a URL such as http://10.0.0.1:2380", flag, s)
		}
		return *u, nil
	}
	if o.name == "" {
		return nil, errors.New("--name must not be empty")
	}
	if o.state != "new" && o.state != "existing" {
		return nil, fmt.Errorf("--initial-cluster-state %q: want new or existing", o.state)
	}
	if o.advertisePeer == "" {
		o.advertisePeer = o.listenPeer
	}
	if o.advertiseClient == "" {
		o.advertiseClient = o.listenClient
	}
	lp, err := parse("listen-peer", o.listenPeer)
	if err != nil {
		return nil, err
	}
	lc, err := parse("listen-client", o.listenClient)
	if err != nil {
		return nil, err
	}
	ap, err := parse("advertise-peer", o.advertisePeer)
	if err != nil {
		return nil, err
	}
	ac, err := parse("advertise-client", o.advertiseClient)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = o.name
	cfg.Dir = o.dataDir
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{lp}, []url.URL{ap}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{lc}, []url.URL{ac}
	cfg.InitialClusterToken = o.clusterToken
	cfg.ClusterState = o.state
	if o.initialCluster == "" {
		cfg.InitialCluster = cfg.InitialClusterFromName(o.name)
	} else {
		seen := false
		for _, m := range strings.Split(o.initialCluster, ",") {
			name, u, ok := strings.Cut(strings.TrimSpace(m), "=")
			if !ok || name == "" {
				return nil, fmt.Errorf("--initial-cluster: %q is not NAME=PEER-URL", m)
			}
			if _, err := parse("initial-cluster", u); err != nil {
				return nil, err
			}
			seen = seen || name == o.name
		}
		if !seen {
			return nil, fmt.Errorf("--initial-cluster does not name this member (%s)", o.name)
		}
		cfg.InitialCluster = o.initialCluster
	}
	cfg.LogLevel = o.logLevel
	cfg.Logger = "zap"
	cfg.LogOutputs = []string{"stderr"}
	// flyfs's transactions can be large (a checked directory listing, a
	// 10 000-key batch); etcd's defaults (128 ops, 1.5 MiB) refuse them.
	cfg.MaxTxnOps = 1 << 20
	cfg.MaxRequestBytes = 32 << 20
	cfg.QuotaBackendBytes = o.quotaBytes
	// etcd keeps every revision until compacted, in memory and on disk.
	// flyfs reads only at a transaction's own start revision, seconds old
	// at most (an older one is retried as too old), so five minutes of
	// history is plenty.
	cfg.AutoCompactionMode, cfg.AutoCompactionRetention = "periodic", "5m"
	cfg.ElectionMs, cfg.TickMs = 1000, 100 // etcd's defaults
	return cfg, nil
}
