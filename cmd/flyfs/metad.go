package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv/kvopen"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/metad"
	"github.com/flyfs/flyfs/metad/keys"
	"github.com/flyfs/flyfs/metad/ns"
	"github.com/spf13/cobra"
)

func metadCmd() *cobra.Command {
	var (
		kvc       kvopen.Config
		dataDir   string
		listen    string
		advertise string
		tok       tokenOptions
		masterKey string
		limits    rpc.Options // server bounds
		gcGrace   time.Duration
		trashDays int
		inlineMax int
		mgmtds    []string
		obsOpts   observeOptions
	)
	cmd := &cobra.Command{
		Use:   "metad",
		Short: "Run a metadata service over the KV store",
		Long: `Run a stateless metadata service: the namespace (inodes, directory entries,
layouts, write sessions, file lengths, the GC queue) as transactions on the KV store.
Any number can run on one store (--kv etcd or fdb for several processes; pebble for
one), and any can be restarted; clients retry on another with the same request ids.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			log, err := obsOpts.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			token, err := tok.resolve("flyfs metad", log)
			if err != nil {
				return err
			}
			obs, err := obsOpts.start(log)
			if err != nil {
				return err
			}
			defer obs.close()
			reg := obs.role("metad")
			if kvc.Engine == "" || kvc.Engine == "pebble" {
				kvc.Dir = filepath.Join(dataDir, "meta")
				if err := privateState(dataDir, kvc.Dir); err != nil {
					return err
				}
			}
			master, err := metadMasterKey(masterKey, kvc.Engine, dataDir)
			if err != nil {
				return err
			}
			db, err := kvopen.Open(cmd.Context(), kvc)
			if err != nil {
				return err
			}
			defer db.Close()
			l, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			cfg := metad.Config{KV: db, RPC: withLimits(rpc.Options{Token: token, Logger: log, Registerer: reg}, limits), Logger: log, Addr: l.Addr().String(), MasterKey: master,
				Namespace: ns.Options{GCGrace: graceOption(gcGrace), TrashDays: trashDays, InlineMax: inlineMax}, Registerer: reg}
			if advertise != "" {
				cfg.Addr = advertise // what clients dial: a name or address reachable from them
			}
			if len(mgmtds) > 0 {
				// Routing brings chain tables (new files' layouts) and turns on
				// the GC worker that deletes removed files' chunks.
				rc := rpc.NewClient(rpc.Options{Token: token, Logger: log, Registerer: reg})
				defer rc.Close()
				ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
				src, err := client.NewMgmtdSource(ctx, mgmtds, rc, time.Second)
				cancel()
				if err != nil {
					return fmt.Errorf("reach mgmtd %v: %w", mgmtds, err)
				}
				defer src.Close()
				cfg.Routing, cfg.Storage, cfg.Mgmtd = src, rc, src.Mgmtd()
			}
			srv, err := metad.New(cfg)
			if err != nil {
				l.Close()
				return err
			}
			metricsURL, err := obs.serve(obsOpts, nil, log)
			if err != nil {
				srv.Close()
				l.Close()
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "metad listening on %s (kv %s)\n", l.Addr(), kvc.Engine)
			if metricsURL != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "metrics at %s\n", metricsURL)
			}
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			go func() { <-sig; srv.Close() }()
			if err := srv.Serve(l); err != nil && !errors.Is(err, rpc.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	addKVFlags(f, &kvc)
	f.StringVar(&dataDir, "data", "flyfs-metad", "pebble: directory of the KV store")
	f.StringVar(&listen, "listen", "127.0.0.1:9200", "address to serve RPCs on")
	f.StringVar(&advertise, "advertise", "", "address registered with mgmtd for clients to dial (default: the listen address)")
	addTokenFlags(f, &tok)
	addRPCFlags(f, &limits)
	f.DurationVar(&gcGrace, "gc-grace", 5*time.Minute, "how long removed files keep their chunks, so readers that have them open keep reading (0: none; flyfs admin gc collects now)")
	f.IntVar(&inlineMax, "inline-file-max", client.DefaultInlineMax, "keep the data of files up to this many bytes, written whole by one writer, in their inodes instead of in chunks (0: never). The metadata store does not encrypt: set 0 where storage encrypts chunk content at rest")
	f.IntVar(&trashDays, "trash-days", 0, "keep removed files and trees in /.flyfs-trash this many days, restorable with flyfs admin trash (0: no trash); every metad of a cluster takes the same")
	f.StringVar(&masterKey, "master-key-file", "", "file holding the master key that seals access-key secrets, 64 hex digits (env FLYFS_MASTER_KEY_FILE, or the key itself in FLYFS_MASTER_KEY); every metad of a cluster needs the same; default with pebble: <data>/master.key, drawn on the first start")
	f.StringSliceVar(&mgmtds, "mgmtd", nil, "cluster manager addresses: chain tables for new files, and GC of removed files' chunks")
	addObserveFlags(f, &obsOpts)
	return cmd
}

// metadMasterKey finds the master key: --master-key-file, FLYFS_MASTER_KEY,
// or with the embedded Pebble store (one process) <data>/master.key, drawn
// on the first start. A store shared by several metad needs the key given.
func metadMasterKey(file, engine, dataDir string) ([]byte, error) {
	switch {
	case file != "":
		k, err := cluster.ReadMasterKey(file)
		if err != nil {
			return nil, fmt.Errorf("--master-key-file: %w", err)
		}
		return k, nil
	case os.Getenv("FLYFS_MASTER_KEY") != "":
		k, err := cluster.ParseMasterKey(os.Getenv("FLYFS_MASTER_KEY"))
		if err != nil {
			return nil, fmt.Errorf("FLYFS_MASTER_KEY: %w", err)
		}
		return k, nil
	case engine == "" || engine == "pebble":
		return cluster.EnsureMasterKey(dataDir)
	case engine == "mem": // a store that lives as long as this process
		k := make([]byte, keys.MasterKeySize)
		rand.Read(k)
		return k, nil
	}
	return nil, fmt.Errorf("no master key: with --kv %s every metad shares the store, so each needs the same master key: give --master-key-file (or FLYFS_MASTER_KEY), e.g. from: openssl rand -hex 32", engine)
}

// graceOption is a --gc-grace as ns.Options takes it (there 0 is the
// default and a negative value none).
func graceOption(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
