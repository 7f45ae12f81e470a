package main

import (
	"time"

	"github.com/flyfs/flyfs/bench/vs/chain"
	"github.com/flyfs/flyfs/bench/vs/kvtxn"
	"github.com/flyfs/flyfs/bench/vs/metaops"
	"github.com/flyfs/flyfs/bench/vs/recovery"
	"github.com/flyfs/flyfs/bench/vs/rpccall"
	"github.com/spf13/cobra"
)

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure flyfs parts against their baselines, side by side in one run",
		Long: `Two kinds of benchmark:

  comparisons, each running one part of flyfs and its baseline side by side in one
  run and printing both with the ratio and its target:
    kv, rpc, engine, storage, recovery, meta, fuse, s3-gateway
  loads, which measure any target they are pointed at (a mounted path, an S3
  endpoint, a cluster) with a progress bar, latency percentiles and --json:
    fs, s3, mdtest

Each subcommand's help names what it compares against.`,
	}
	cmd.AddCommand(benchKVCmd(), benchRPCCmd(), benchStorageCmd(), benchRecoveryCmd(), benchMetaCmd())
	cmd.AddCommand(benchEngineCmd(), benchFSCmd(), benchFuseCmd(), benchMdtestCmd(), benchS3Cmd(), benchS3GatewayCmd(), benchCacheCmd(), benchSnapshotCmd())
	return cmd
}

func benchKVCmd() *cobra.Command {
	var cfg kvtxn.Config
	cmd := &cobra.Command{
		Use:   "kv",
		Short: "Pebble engine transactions/s against raw Pebble batch commits (same sync setting)",
		Long: `Measures, in one run and with the same WAL sync setting:
  raw Pebble batch commits/s (1 and N writers), read-write transactions/s
  (1 key read + 1 written) with N writers on distinct keys, and N writers on one
  hot key (conflicts and retries). Target: uncontended transactions >= 0.5x raw.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			_, err := kvtxn.Run(cmd.Context(), cfg, cmd.OutOrStdout())
			return err
		},
	}
	cmd.Flags().StringVar(&cfg.Dir, "dir", "", "scratch directory (default: a temporary one)")
	cmd.Flags().DurationVar(&cfg.Duration, "duration", 3*time.Second, "time per measurement")
	cmd.Flags().IntVar(&cfg.Writers, "writers", 16, "concurrent writers")
	cmd.Flags().BoolVar(&cfg.NoSync, "no-sync", false, "skip the WAL fsync on both sides")
	return cmd
}

func benchRPCCmd() *cobra.Command {
	var cfg rpccall.Config
	cmd := &cobra.Command{
		Use:   "rpc",
		Short: "RPC small-call rate and payload throughput against a raw TCP loop",
		Long: `Measures, in one run over loopback: small calls/s with 64 concurrent callers over
one client (with p50/p99 latency), and 1 MiB and 4 MiB payload throughput against
a raw TCP loop moving the same bytes. Target: payload throughput >= 0.6x raw TCP.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			_, err := rpccall.Run(cmd.Context(), cfg, cmd.OutOrStdout())
			return err
		},
	}
	cmd.Flags().DurationVar(&cfg.Duration, "duration", 3*time.Second, "time per measurement")
	return cmd
}

func benchStorageCmd() *cobra.Command {
	var cfg chain.Config
	cmd := &cobra.Command{
		Use:   "storage",
		Short: "Chunk storage: one engine vs a CRAQ chain of 3 on loopback; 4 KiB reads batched vs not",
		Long: `Measures, in one run with the same sync setting: 1 MiB chunk writes and reads
through one chunk engine (the baseline), the same through a chain of three
storaged on loopback (writes replicated by CRAQ, reads spread over the replicas),
and 4 KiB random reads batched 32 per RPC against one per RPC.
Targets: chain writes >= 0.28x one engine; spread reads >= 1.0x one engine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			_, err := chain.Run(cmd.Context(), cfg, cmd.OutOrStdout())
			return err
		},
	}
	cmd.Flags().StringVar(&cfg.Dir, "dir", "", "scratch directory on the disk to measure (default: a temporary one)")
	cmd.Flags().DurationVar(&cfg.Duration, "duration", 3*time.Second, "time per measurement")
	cmd.Flags().IntVar(&cfg.Concurrency, "concurrency", 8, "concurrent callers")
	cmd.Flags().BoolVar(&cfg.NoSync, "no-sync", false, "skip fsyncs on both sides")
	return cmd
}

func benchRecoveryCmd() *cobra.Command {
	var cfg recovery.Config
	cmd := &cobra.Command{
		Use:   "recovery",
		Short: "Rebuild of a replaced target vs the chain's write rate, with a foreground read load",
		Long: `Fills a chain of three storaged (under a cluster manager) with --bytes of 1 MiB
chunks, measuring the chain's write rate; runs a read load; replaces the tail's disk
(kill, wipe, restart) and measures how fast recovery rebuilds it and what the read load
keeps meanwhile. Targets: rebuild >= 0.5x write rate; reads >= 0.5x of before.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			_, err := recovery.Run(cmd.Context(), cfg, cmd.OutOrStdout())
			return err
		},
	}
	cmd.Flags().Int64Var(&cfg.Bytes, "bytes", 2<<30, "data on the rebuilt target")
	cmd.Flags().StringVar(&cfg.Dir, "dir", "", "scratch directory on the disk to measure (default: a temporary one)")
	cmd.Flags().BoolVar(&cfg.NoSync, "no-sync", false, "skip fsyncs")
	cmd.Flags().Int64Var(&cfg.ResyncRate, "resync-rate", 1<<30, "recovery throttle in bytes per second")
	return cmd
}

func benchMetaCmd() *cobra.Command {
	var cfg metaops.Config
	cmd := &cobra.Command{
		Use:   "meta",
		Short: "Namespace operations and file I/O through the client, next to the local file system",
		Long: `Runs mgmtd, three storaged and a metad (pebble) on loopback and measures through
core/client with --callers concurrent callers: create+close in one directory and over
100, stat, rename, readdir of a --dir-entries directory, each next to the same work on
this machine's local file system; then a sequential write and read of --file-bytes with
1 replica and with 3, next to one chunk engine. Targets: stat >= 0.2x local,
create >= 0.1x local.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			_, err := metaops.Run(cmd.Context(), cfg, cmd.OutOrStdout())
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Dir, "dir", "", "scratch directory on the disk to measure (default: a temporary one)")
	f.IntVar(&cfg.Callers, "callers", 16, "concurrent callers")
	f.IntVar(&cfg.Files, "files", 4000, "files per create/stat/rename measurement")
	f.IntVar(&cfg.DirEntries, "dir-entries", 100_000, "entries of the directory listed")
	f.Int64Var(&cfg.FileBytes, "file-bytes", 1<<30, "size of the sequential file")
	f.BoolVar(&cfg.NoSync, "no-sync", false, "skip fsyncs")
	return cmd
}
