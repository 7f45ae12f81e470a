package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/storaged"
	"github.com/flyfs/flyfs/storaged/engine"
	"github.com/spf13/cobra"
)

func storagedCmd() *cobra.Command {
	var (
		disks       []string
		targets     []string
		node        uint32
		listen      string
		routingFile string
		tok         tokenOptions
		limits      rpc.Options // server bounds
		noSync      bool
		mgmtdAddrs  []string
		advertise   string
		hbTimeout   time.Duration
		resyncRate  int64
		keyFile     string
		segmentFlag string
		dur         storageDurability
		faultsFile  string
		obsOpts     observeOptions
	)
	cmd := &cobra.Command{
		Use:   "storaged",
		Short: "Run a storage service: chunk engine per disk and CRAQ chain replication",
		Long: `Run a storage service. Each --data directory is one disk with its own chunk
engine; each --target ID:CHAIN[:DISK] places a storage target of a chain on a disk
(index into --data, default 0).

With --mgmtd, the node heartbeats to the cluster manager, learns its targets and
routing from it (no --target needed), recovers syncing successors, and stops serving
when it cannot reach mgmtd for half the heartbeat timeout. Without it, routing (nodes,
chains, target states) comes from --routing-file, a JSON file re-read when it changes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			log, err := obsOpts.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			token, err := tok.resolve("flyfs storaged", log)
			if err != nil {
				return err
			}
			obs, err := obsOpts.start(log)
			if err != nil {
				return err
			}
			defer obs.close()
			reg := obs.role("storaged")
			if len(disks) == 0 {
				return errors.New("storaged needs at least one --data directory")
			}
			if err := privateState(disks...); err != nil {
				return err
			}
			if (routingFile == "") == (len(mgmtdAddrs) == 0) {
				return errors.New("storaged needs exactly one of --mgmtd (a managed cluster) and --routing-file (routing by hand)")
			}
			tcs, err := parseTargets(targets)
			if err != nil {
				return err
			}
			segment, err := parseSegment(segmentFlag)
			if err != nil {
				return err
			}
			inline, err := dur.inline()
			if err != nil {
				return err
			}
			encKey, err := readEncryptionKey(keyFile)
			if err != nil {
				return err
			}
			l, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			if advertise == "" {
				advertise = l.Addr().String()
			}
			cfg := storaged.Config{Node: routing.NodeID(node), Addr: advertise, Disks: disks, Targets: tcs,
				RPC: withLimits(rpc.Options{Token: token, Logger: log, Registerer: reg}, limits), NoSync: noSync, Logger: log,
				HeartbeatTimeout: hbTimeout, ResyncBytesPerSec: resyncRate, Registerer: reg, EncryptionKey: encKey, SegmentSize: segment,
				SyncWindow: dur.syncWindow, InlineMax: inline}
			if faultsFile != "" {
				cfg.DiskFaults = &engine.Faults{}
				fctx, stop := context.WithCancel(cmd.Context())
				defer stop()
				go followDiskFaults(fctx, faultsFile, cfg.DiskFaults, log)
			}
			if len(mgmtdAddrs) > 0 {
				rc := rpc.NewClient(rpc.Options{Token: token, Logger: log, Registerer: reg})
				defer rc.Close()
				ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
				src, err := client.NewMgmtdSource(ctx, mgmtdAddrs, rc, time.Second)
				cancel()
				if err != nil {
					return fmt.Errorf("reach mgmtd %v: %w", mgmtdAddrs, err)
				}
				defer src.Close()
				cfg.Routing, cfg.Mgmtd = src, src.Mgmtd()
				pctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
				p, err := src.Mgmtd().GetPrimary(pctx)
				cancel()
				if err != nil {
					return fmt.Errorf("ask mgmtd %v for the cluster id: %w", mgmtdAddrs, err)
				}
				cfg.ClusterID = p.ClusterID
			} else {
				src, err := routing.OpenFile(routingFile, time.Second)
				if err != nil {
					return err
				}
				defer src.Close()
				cfg.Routing = src
			}
			srv, err := storaged.New(cfg)
			if err != nil {
				l.Close()
				return err
			}
			defer srv.Close()
			metricsURL, err := obs.serve(obsOpts, nil, log)
			if err != nil {
				l.Close()
				return err
			}
			if len(mgmtdAddrs) > 0 {
				log.Info("storaged up; its targets come from mgmtd's chains", "node", node, "listen", l.Addr().String(), "disks", disks, "cluster", cfg.ClusterID, "metrics", metricsURL)
			} else {
				log.Info("storaged up", "node", node, "listen", l.Addr().String(), "disks", disks, "targets", len(tcs), "metrics", metricsURL)
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
	f.StringSliceVar(&disks, "data", nil, "disk directories, one chunk engine each (repeat or comma-separate)")
	f.StringArrayVar(&targets, "target", nil, "a storage target as ID:CHAIN[:DISK] (repeatable)")
	f.Uint32Var(&node, "node", 1, "this service's node id")
	f.StringVar(&listen, "listen", "127.0.0.1:9100", "address to serve RPCs on")
	f.StringVar(&routingFile, "routing-file", "", "JSON routing information, re-read when it changes")
	addTokenFlags(f, &tok)
	addRPCFlags(f, &limits)
	f.BoolVar(&noSync, "no-sync", false, "acknowledge writes before they reach the disk")
	f.StringSliceVar(&mgmtdAddrs, "mgmtd", nil, "cluster manager addresses (comma-separated): run as a managed node")
	f.StringVar(&advertise, "advertise", "", "address others reach this node at (default: the listen address)")
	f.DurationVar(&hbTimeout, "heartbeat-timeout", 6*time.Second, "T: mgmtd's failure timeout; the node stops serving after T/2 without mgmtd")
	f.Int64Var(&resyncRate, "resync-rate", 256<<20, "recovery throttle in bytes per second")
	f.StringVar(&keyFile, "encryption-key-file", "", encryptionKeyHelp)
	f.StringVar(&segmentFlag, "checksum-segment", "4KiB", segmentHelp)
	dur.addFlags(f)
	f.StringVar(&faultsFile, "disk-faults-file", "", diskFaultsHelp)
	addObserveFlags(f, &obsOpts)
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
