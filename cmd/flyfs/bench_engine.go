package main

import (
	"os"
	"time"

	"github.com/flyfs/flyfs/bench/vs/chunkengine"
	"github.com/spf13/cobra"
)

func benchEngineCmd() *cobra.Command {
	var cfg chunkengine.Config
	var noSync bool
	var segment string
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "The chunk engine vs plain pwrite/pread on the same disk (same sync setting)",
		Long: `Measures, in one run on the disk under --dir and with the same sync setting: whole
chunk writes of new chunks against pwrite at distinct offsets of a preallocated file
(with fdatasync per write when syncing), verified whole-chunk reads against pread,
and 4 KiB random reads inside chunks against the same reads of the plain file.
Engine and plain alternate in short rounds, each after a syncfs.
Targets: writes >= 0.7x plain, reads >= 0.8x plain.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			cfg.Sync = !noSync
			var err error
			if cfg.SegmentSize, err = parseSegment(segment); err != nil {
				return err
			}
			if cfg.Dir == "" {
				cfg.Dir = os.TempDir()
			}
			_, err = chunkengine.Run(cmd.Context(), cfg, cmd.OutOrStdout())
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Dir, "dir", "", "directory on the disk to measure (default: the temporary directory)")
	f.DurationVar(&cfg.Duration, "duration", 3*time.Second, "time per measurement and side")
	f.IntVar(&cfg.ChunkSize, "chunk-size", 1<<20, "chunk size in bytes")
	f.IntVar(&cfg.Concurrency, "concurrency", 4, "concurrent callers per side")
	f.BoolVar(&noSync, "no-sync", false, "skip fsyncs on both sides")
	f.StringVar(&segment, "checksum-segment", "4KiB", "the engine's checksum segment (4KiB to 64KiB)")
	return cmd
}
