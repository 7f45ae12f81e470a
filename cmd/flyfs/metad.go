package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv/kvopen"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/metad"
	"github.com/spf13/cobra"
)

func metadCmd() *cobra.Command {
	var (
		kvc       kvopen.Config
		dataDir   string
		listen    string
		advertise string
		tok       tokenOptions
		mgmtds    []string
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
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			token, err := tok.resolve("flyfs metad", log)
			if err != nil {
				return err
			}
			if kvc.Engine == "" || kvc.Engine == "pebble" {
				kvc.Dir = filepath.Join(dataDir, "meta")
				if err := os.MkdirAll(kvc.Dir, 0o755); err != nil {
					return err
				}
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
			cfg := metad.Config{KV: db, RPC: rpc.Options{Token: token, Logger: log}, Logger: log, Addr: l.Addr().String()}
			if advertise != "" {
				cfg.Addr = advertise // what clients dial: a name or address reachable from them
			}
			if len(mgmtds) > 0 {
				// Routing brings chain tables (new files' layouts) and turns on
				// the GC worker that deletes removed files' chunks.
				rc := rpc.NewClient(rpc.Options{Token: token, Logger: log})
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
			fmt.Fprintf(cmd.OutOrStdout(), "metad listening on %s (kv %s)\n", l.Addr(), kvc.Engine)
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
	f.StringSliceVar(&mgmtds, "mgmtd", nil, "cluster manager addresses: chain tables for new files, and GC of removed files' chunks")
	return cmd
}
