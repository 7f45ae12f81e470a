package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/storaged"
	"github.com/spf13/cobra"
)

func storagedCmd() *cobra.Command {
	var (
		disks       []string
		targets     []string
		node        uint32
		listen      string
		routingFile string
		token       string
		noSync      bool
	)
	cmd := &cobra.Command{
		Use:   "storaged",
		Short: "Run a storage service: chunk engine per disk and CRAQ chain replication",
		Long: `Run a storage service. Each --data directory is one disk with its own chunk
engine; each --target ID:CHAIN[:DISK] places a storage target of a chain on a disk
(index into --data, default 0).

Until the cluster manager is built, routing (nodes, chains, target states) comes from
--routing-file, a JSON file re-read when it changes; a newer "Version" replaces the old.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			if len(disks) == 0 {
				return errors.New("storaged needs at least one --data directory")
			}
			if routingFile == "" {
				return errors.New("storaged needs --routing-file (the cluster manager is not built yet)")
			}
			tcs, err := parseTargets(targets)
			if err != nil {
				return err
			}
			src, err := routing.OpenFile(routingFile, time.Second)
			if err != nil {
				return err
			}
			defer src.Close()
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			srv, err := storaged.New(storaged.Config{Node: routing.NodeID(node), Disks: disks, Targets: tcs, Routing: src,
				RPC: rpc.Options{Token: token, Logger: log}, NoSync: noSync, Logger: log})
			if err != nil {
				return err
			}
			defer srv.Close()
			l, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			log.Info("storaged up", "node", node, "listen", l.Addr().String(), "disks", disks, "targets", len(tcs))
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
	f.StringSliceVar(&disks, "data", nil, "disk directories, one chunk engine each (repeat or comma-separate)")
	f.StringArrayVar(&targets, "target", nil, "a storage target as ID:CHAIN[:DISK] (repeatable)")
	f.Uint32Var(&node, "node", 1, "this service's node id")
	f.StringVar(&listen, "listen", "127.0.0.1:9100", "address to serve RPCs on")
	f.StringVar(&routingFile, "routing-file", "", "JSON routing information, re-read when it changes")
	f.StringVar(&token, "token", "", "cluster token every peer must present")
	f.BoolVar(&noSync, "no-sync", false, "acknowledge writes before they reach the disk")
	return cmd
}

func parseTargets(specs []string) ([]storaged.TargetConfig, error) {
	var out []storaged.TargetConfig
	for _, s := range specs {
		parts := strings.Split(s, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return nil, fmt.Errorf("--target %q: want ID:CHAIN[:DISK]", s)
		}
		var nums [3]uint64
		for i, p := range parts {
			n, err := strconv.ParseUint(p, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("--target %q: %q is not a number", s, p)
			}
			nums[i] = n
		}
		out = append(out, storaged.TargetConfig{ID: routing.TargetID(nums[0]), Chain: routing.ChainID(nums[1]), Disk: int(nums[2])})
	}
	return out, nil
}
