package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/kvopen"
	"github.com/google/uuid"
	"github.com/spf13/cobra"
)

func serverCmd() *cobra.Command {
	var dataDir string
	var kvc kvopen.Config
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run every flyfs role in one process on one machine (the embedded default)",
		Long: `Run flyfs on one machine over the embedded Pebble metadata engine, with its
data under --data. Restarting on the same --data brings everything back.

Today the server opens (or creates) the metadata store under --data and keeps it
open until Ctrl-C; the storage, metadata, S3 and console services join it as their
issues land.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runServer(ctx, dataDir, kvc)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data", "flyfs-data", "directory for all of the server's state")
	addKVFlags(cmd.Flags(), &kvc)
	return cmd
}

func runServer(ctx context.Context, dataDir string, kvc kvopen.Config) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if kvc.Engine == "" || kvc.Engine == "pebble" {
		kvc.Dir = filepath.Join(dataDir, "meta")
		if err := os.MkdirAll(kvc.Dir, 0o755); err != nil {
			return fmt.Errorf("create data directory: %w", err)
		}
	}
	db, err := kvopen.Open(ctx, kvc)
	if err != nil {
		return err
	}
	defer db.Close()
	id, fresh, err := clusterID(ctx, db)
	if err != nil {
		return err
	}
	log.Info("flyfs server up", "cluster", id, "new", fresh, "kv", kvc.Engine, "data", dataDir)
	log.Info("not built yet: storaged, mgmtd, metad, FUSE mount, S3 gateway, console; they join as their issues land")
	<-ctx.Done()
	log.Info("shutting down")
	return nil
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
