package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/console"
	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/kvopen"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/gateway"
	"github.com/flyfs/flyfs/metad"
	"github.com/flyfs/flyfs/mgmtd"
	"github.com/flyfs/flyfs/posix/fusefs"
	"github.com/flyfs/flyfs/storaged"
	"github.com/google/uuid"
	"github.com/spf13/cobra"
)

// serverOptions configure the all-in-one server.
type serverOptions struct {
	dataDir   string
	kvc       kvopen.Config
	mgmtdAddr string
	metadAddr string
	disks     int
	replicas  int
	chains    int
	token     string
	noSync    bool
	// Front ends; an empty address turns one off.
	consoleAddr string
	s3Addr      string
	mountpoint  string
	// The S3 root key (FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY); empty: generated
	// on the first start and printed once.
	accessKey, secretKey string
}

func serverCmd() *cobra.Command {
	var o serverOptions
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run every flyfs role in one process on one machine (the embedded default)",
		Long: `Run flyfs on one machine over the embedded Pebble metadata engine, with all its
state under --data: a cluster manager, one storage service per data disk
(--disks, under --data/disk<N>), and chains of --replicas targets over them, created
on the first start. Restarting on the same --data brings everything back.

It also runs the metadata service on the same store. The FUSE mount, the S3 gateway
and the console join this process as their issues land.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runServer(ctx, o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data", "flyfs-data", "directory for all of the server's state")
	addKVFlags(f, &o.kvc)
	f.StringVar(&o.mgmtdAddr, "mgmtd-addr", "127.0.0.1:9000", "address of the cluster manager")
	f.StringVar(&o.metadAddr, "metad-addr", "127.0.0.1:9200", "address of the metadata service")
	f.IntVar(&o.disks, "disks", 1, "storage services, one disk directory each")
	f.IntVar(&o.replicas, "replicas", 1, "replicas per chain (at most --disks)")
	f.IntVar(&o.chains, "chains", 8, "chains created on the first start")
	f.StringVar(&o.token, "token", "", "cluster token every peer must present")
	f.BoolVar(&o.noSync, "no-sync", false, "acknowledge writes before they reach the disk")
	f.StringVar(&o.consoleAddr, "console-addr", "127.0.0.1:9400", "address of the admin console (empty: no console)")
	f.StringVar(&o.mountpoint, "mount", "", "also mount the file system here with FUSE (unmounted at exit)")
	f.StringVar(&o.s3Addr, "s3-addr", "127.0.0.1:9300", "address of the S3 gateway (empty: no gateway)")
	f.StringVar(&o.accessKey, "access-key", "", "S3 root access key (env FLYFS_ACCESS_KEY); empty: generated on the first start and printed")
	f.StringVar(&o.secretKey, "secret-key", "", "S3 root secret key (env FLYFS_SECRET_KEY)")
	return cmd
}

func runServer(ctx context.Context, o serverOptions, out interface{ Write([]byte) (int, error) }) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if o.replicas < 1 || o.replicas > o.disks {
		return fmt.Errorf("--replicas %d: want 1..--disks (%d)", o.replicas, o.disks)
	}
	if o.kvc.Engine == "" || o.kvc.Engine == "pebble" {
		o.kvc.Dir = filepath.Join(o.dataDir, "meta")
		if err := os.MkdirAll(o.kvc.Dir, 0o755); err != nil {
			return fmt.Errorf("create data directory: %w", err)
		}
	}
	db, err := kvopen.Open(ctx, o.kvc)
	if err != nil {
		return err
	}
	defer db.Close()
	id, fresh, err := clusterID(ctx, db)
	if err != nil {
		return err
	}
	ropts := rpc.Options{Token: o.token, Logger: log}

	// The cluster manager.
	ml, err := net.Listen("tcp", o.mgmtdAddr)
	if err != nil {
		return fmt.Errorf("mgmtd: %w", err)
	}
	const T = 3 * time.Second
	m, err := mgmtd.New(mgmtd.Config{ID: "server", Addr: ml.Addr().String(), KV: db, HeartbeatTimeout: T, RPC: ropts, Logger: log})
	if err != nil {
		ml.Close()
		return err
	}
	defer m.Close()
	go m.Serve(ml)
	mgmtdAddrs := []string{ml.Addr().String()}
	rc := rpc.NewClient(ropts)
	defer rc.Close()
	if err := ensureChains(ctx, client.NewMgmtd(rc, mgmtdAddrs), o); err != nil {
		return err
	}

	// The metadata service, on the same store, laying files out over the
	// chains mgmtd publishes.
	msrc, err := client.NewMgmtdSource(ctx, mgmtdAddrs, rc, time.Second)
	if err != nil {
		return err
	}
	defer msrc.Close()
	mdl, err := net.Listen("tcp", o.metadAddr)
	if err != nil {
		return fmt.Errorf("metad: %w", err)
	}
	md, err := metad.New(metad.Config{KV: db, Routing: msrc, Storage: rc, RPC: ropts, Logger: log,
		Mgmtd: msrc.Mgmtd(), Addr: mdl.Addr().String(), ID: "server"})
	if err != nil {
		mdl.Close()
		return err
	}
	defer md.Close()
	go md.Serve(mdl)

	// One storage service per disk.
	var storageAddrs []string
	for i := 0; i < o.disks; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		src, err := client.NewMgmtdSource(sctx, mgmtdAddrs, rc, time.Second)
		cancel()
		if err != nil {
			l.Close()
			return err
		}
		defer src.Close()
		s, err := storaged.New(storaged.Config{Node: routing.NodeID(i + 1), Addr: l.Addr().String(),
			Disks: []string{filepath.Join(o.dataDir, fmt.Sprintf("disk%d", i))}, Routing: src, Mgmtd: src.Mgmtd(),
			HeartbeatTimeout: T, RPC: ropts, NoSync: o.noSync, Logger: log})
		if err != nil {
			l.Close()
			return err
		}
		defer s.Close()
		go s.Serve(l)
		storageAddrs = append(storageAddrs, l.Addr().String())
	}

	fmt.Fprintf(out, "flyfs server up: cluster %s (new: %v), data %s, kv %s\n", id, fresh, o.dataDir, o.kvc.Engine)
	fmt.Fprintf(out, "  mgmtd     %s\n", mgmtdAddrs[0])
	fmt.Fprintf(out, "  metad     %s\n", mdl.Addr())
	for i, a := range storageAddrs {
		fmt.Fprintf(out, "  storaged  %s (node %d, %s)\n", a, i+1, filepath.Join(o.dataDir, fmt.Sprintf("disk%d", i)))
	}
	// Front ends start once every chain serves with known node addresses,
	// so their first requests do not race the storage services' first
	// heartbeats.
	if err := waitChainsServe(ctx, msrc, 30*time.Second); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: a clean exit
		}
		return err
	}
	// The front ends share one client of the cluster.
	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	fs, err := client.Dial(dctx, client.Config{Mgmtd: mgmtdAddrs, Token: o.token, Logger: log})
	dcancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("connect the front ends: %w", err)
	}
	defer fs.Close()
	// Access keys: the gateway's store, shared by the console (sign-in with
	// the root key or any key with admin rights).
	keys := gateway.NewKeyStore(db)
	if o.accessKey == "" && o.secretKey == "" {
		k, created, err := keys.EnsureRoot(ctx)
		if err != nil {
			return err
		}
		if created {
			fmt.Fprintf(out, "  root key  access key %s, secret %s (generated; shown only now)\n", k.ID, k.Secret)
		}
	}
	ckeys := consoleKeys{store: keys, rootID: o.accessKey, rootSecret: o.secretKey}
	if o.s3Addr != "" {
		stopGateway, err := serveGateway(ctx, o, db, fs, mgmtdAddrs, out, log)
		if err != nil {
			return err
		}
		defer stopGateway()
	}
	if o.consoleAddr != "" {
		stopConsole, err := serveConsole(ctx, o, ckeys, fs, mgmtdAddrs, out, log)
		if err != nil {
			return err
		}
		defer stopConsole()
	}
	if o.mountpoint != "" {
		mnt, err := fusefs.Mount(ctx, fs, o.mountpoint, fusefs.Options{AllowOther: true, Log: log,
			Capacity: fusefs.MgmtdCapacity(client.NewMgmtd(rc, mgmtdAddrs))})
		if err != nil {
			return fmt.Errorf("mount %s: %w", o.mountpoint, err)
		}
		defer mnt.Unmount() // Ctrl-C: unmount (flushing what is in flight) before the services stop
		fmt.Fprintf(out, "  mount     %s\n", o.mountpoint)
	}
	fmt.Fprintf(out, "  try: flyfs admin --mgmtd %s chains\n", mgmtdAddrs[0])
	<-ctx.Done()
	log.Info("shutting down")
	return nil
}

// ensureChains creates the server's chains on its first start.
func ensureChains(ctx context.Context, m *client.Mgmtd, o serverOptions) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := m.GetRouting(ctx, 0)
	if err != nil {
		return fmt.Errorf("read routing: %w", err)
	}
	if resp.Info != nil && len(resp.Info.Chains) > 0 {
		return nil
	}
	req := &mgmtdapi.SetChainsReq{}
	for c := 1; c <= o.chains; c++ {
		chain := routing.Chain{ID: routing.ChainID(c), Version: 1}
		for r := 0; r < o.replicas; r++ {
			node := routing.NodeID((c-1+r)%o.disks + 1)
			chain.Targets = append(chain.Targets, routing.Target{ID: routing.TargetID(c*100 + r + 1), Node: node, Public: routing.Serving, Local: routing.UpToDate})
		}
		req.Chains = append(req.Chains, chain)
	}
	_, err = m.SetChains(ctx, req)
	return err
}

// clusterID reads the cluster's id, creating it on first start.
func clusterID(ctx context.Context, db *kv.DB) (id string, fresh bool, err error) {
	key := []byte("CONF/cluster-id")
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = db.Run(ctx, func(tx kv.Txn) error {
		v, found, err := tx.Get(ctx, key)
		if err != nil {
			return err
		}
		if found {
			id, fresh = string(v), false
			return nil
		}
		id, fresh = uuid.NewString(), true
		tx.Set(key, []byte(id))
		return nil
	})
	if err != nil {
		return "", false, errors.Join(errors.New("read cluster id"), err)
	}
	return id, fresh, nil
}

// serveConsole serves the admin console on o.consoleAddr, creating (and
// printing once) an admin access key when the store has none.
func serveConsole(ctx context.Context, o serverOptions, keys console.Keys, fs *client.FS, mgmtds []string, out io.Writer, log *slog.Logger) (func(), error) {
	l, err := net.Listen("tcp", o.consoleAddr)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	con, err := console.New(console.Config{Mgmtd: mgmtds, Token: o.token, FS: fs, Keys: keys, Advertise: l.Addr().String(), Logger: log})
	if err != nil {
		l.Close()
		return nil, err
	}
	srv := &http.Server{Handler: con, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	fmt.Fprintf(out, "  console   http://%s/ (sign in with the root key)\n", l.Addr())
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		con.Close()
	}, nil
}

// waitChainsServe waits until every chain has a serving target whose node
// address routing knows.
func waitChainsServe(ctx context.Context, src *client.MgmtdSource, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		info := src.Current()
		ready := info != nil && len(info.Chains) > 0
		if ready {
			for _, c := range info.Chains {
				r := c.Readable()
				if len(r) == 0 {
					ready = false
					break
				}
				if a, ok := info.Addr(r[0].Node); !ok || a == "" {
					ready = false
					break
				}
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("storage did not come up within %v (see the log)", d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-src.Changed():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// serveGateway serves the S3 gateway on o.s3Addr over the shared client, and
// registers it with mgmtd (the console lists it).
func serveGateway(ctx context.Context, o serverOptions, db *kv.DB, fs *client.FS, mgmtds []string, out io.Writer, log *slog.Logger) (func(), error) {
	gw, err := gateway.New(gateway.Config{FS: fs, KV: db, RootAccessKey: o.accessKey, RootSecretKey: o.secretKey, Logger: log})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", o.s3Addr)
	if err != nil {
		gw.Close()
		return nil, fmt.Errorf("s3 gateway: %w", err)
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 30 * time.Second}
	go srv.Serve(l)
	rctx, stopReg := context.WithCancel(context.Background())
	rc := rpc.NewClient(rpc.Options{Token: o.token, Logger: log})
	go client.NewMgmtd(rc, mgmtds).KeepRegistered(rctx, mgmtdapi.KindGateway, "server", l.Addr().String(), log)
	fmt.Fprintf(out, "  s3        http://%s/ (path-style; aws --endpoint-url http://%s)\n", l.Addr(), l.Addr())
	return func() {
		stopReg()
		rc.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		gw.Close()
	}, nil
}
