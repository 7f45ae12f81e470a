package main

import (
	"time"

	"github.com/flyfs/flyfs/bench/vs/fusemount"
	"github.com/spf13/cobra"
)

func benchFuseCmd() *cobra.Command {
	var cfg fusemount.Config
	var sizeMiB int64
	cmd := &cobra.Command{
		Use:   "fuse",
		Short: "The FUSE mount vs go-fuse's loopback and the local dir; random reads mount vs native API; creates",
		Long: `Measures, in one run, an in-process cluster (1 node, replication 1, Pebble and
chunk engines) mounted with FUSE next to go-fuse's loopback file system over a
local directory (this machine's FUSE ceiling) and the local directory itself:
sequential write and read of one file with 1 MiB requests (reads with cold page
caches all the way down), 4 KiB random reads from --threads threads through the
mount (O_DIRECT) and through the native async API, and file creates. Then, as
programs do I/O (buffered, the kernel's read-ahead) and the mount beside the
loopback back to back: 4 sequential read streams, 4 KiB random reads from cold
caches with 1 and --threads threads, and the one-thread small-file walk of
--small-files files (create with 4 KiB written and closed, stat, read whole,
rename, unlink).
Targets: write >= 1.0x loopback, reads >= 0.8x (sequential) and 0.7x (random),
create 0.5x, stat 0.6x, read 4 KiB file 0.7x, rename and unlink 0.4x, native
>= 2x the mount.
Needs root (direct mounts) and /dev/fuse.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			cfg.Size = sizeMiB << 20
			_, err := fusemount.Run(cmd.Context(), cfg, cmd.OutOrStdout())
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Dir, "dir", "", "scratch directory (default: a temporary one)")
	f.Int64Var(&sizeMiB, "size-mib", 2048, "sequential file size in MiB")
	f.IntVar(&cfg.Threads, "threads", 16, "random-read threads and create callers")
	f.DurationVar(&cfg.Duration, "duration", 5*time.Second, "time per random-read measurement")
	f.IntVar(&cfg.Creates, "creates", 4000, "files created per create measurement")
	f.IntVar(&cfg.Batch, "batch", 16, "native reads each thread keeps in flight")
	f.IntVar(&cfg.SmallFiles, "small-files", 2000, "files of the one-thread small-file walk")
	f.BoolVar(&cfg.NoSync, "no-sync", false, "storage skips fsync (the local side never syncs)")
	return cmd
}
