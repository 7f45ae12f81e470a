package main

import (
	"github.com/flyfs/flyfs/bench/vs/snapshot"
	"github.com/spf13/cobra"
)

func benchSnapshotCmd() *cobra.Command {
	var cfg snapshot.Config
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Directory snapshots of small and large files next to copying the bytes",
		Long: `Runs an in-process cluster and measures: a snapshot of a tree of --files files of
--small-bytes and of one of --big-bytes (the time must not depend on the file sizes:
no byte is copied), cp -r of the large tree through core/client by bytes (what a
copy costs without shared chunks), and with --wide N a snapshot of a tree of N
sparse 1 GiB files (how many files one snapshot, one metadata transaction, holds).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			_, err := snapshot.Run(cmd.Context(), cfg, cmd.OutOrStdout())
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Dir, "dir", "", "scratch directory on the disk to measure (default: a temporary one)")
	f.IntVar(&cfg.Files, "files", 2000, "files of each tree")
	f.IntVar(&cfg.SmallBytes, "small-bytes", 4<<10, "the small tree's file size")
	f.IntVar(&cfg.BigBytes, "big-bytes", 1<<20, "the large tree's file size")
	f.IntVar(&cfg.Wide, "wide", 0, "also snapshot a tree of this many sparse files")
	f.IntVar(&cfg.Clients, "clients", 8, "concurrent writers building the trees")
	f.BoolVar(&cfg.NoSync, "no-sync", false, "acknowledge writes before they reach the disk")
	return cmd
}
