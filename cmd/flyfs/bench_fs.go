package main

import (
	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/bench/load/files"
	"github.com/spf13/cobra"
)

func benchFSCmd() *cobra.Command {
	cfg := files.Defaults()
	big, block, small, randSize := bench.Size(cfg.BigSize), bench.Size(cfg.BlockSize), bench.Size(cfg.SmallSize), bench.Size(cfg.RandSize)
	var asJSON bool
	progress := "auto"
	cmd := &cobra.Command{
		Use:   "fs DIR",
		Short: "File system benchmark on any path: big files, small files, random 4 KiB reads",
		Long: `Measures the file system DIR is on, through ordinary system calls, so a flyfs
mount and a local disk can be compared with the same command:

  seq-write     --threads files of --big-size each, written in --block-size blocks
                and fsynced (the fsync is in the time)
  seq-read      the same files read back in --block-size blocks
  rand-read     --rand-size reads at random aligned offsets of those files for
                --rand-duration, --threads readers
  small-write   --small-count files of --small-size (create, write, close; no fsync)
  small-stat    stat of each
  small-read    open, read, close of each
  small-delete  unlink of each

Every read checks it got the block it asked for. The files live in a fresh
subdirectory of DIR that is removed at the end (--keep leaves it).

Reads right after writes would come from the page cache. --cache says how to avoid
it: fadvise (default: fsync each file and drop its cached pages with
posix_fadvise; no root needed; works on local disks and FUSE mounts, not on tmpfs),
drop (echo 3 > /proc/sys/vm/drop_caches; root), direct (O_DIRECT for big files and
random reads; sizes must be multiples of 4 KiB), none (warm reads).

The table goes to stdout (--json for a machine-readable report); a progress bar
goes to stderr when it is a terminal.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			pw, err := bench.ProgressWriter(progress, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cfg.Dir, cfg.Progress = args[0], pw
			cfg.BigSize, cfg.BlockSize, cfg.SmallSize, cfg.RandSize = int64(big), int64(block), int64(small), int64(randSize)
			rep, err := files.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return rep.WriteJSON(cmd.OutOrStdout())
			}
			return rep.WriteTable(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVarP(&cfg.Threads, "threads", "p", cfg.Threads, "concurrent workers (and big files)")
	f.Var(&big, "big-size", "size of each thread's big file (0: skip big-file and random phases)")
	f.Var(&block, "block-size", "block size of big-file reads and writes")
	f.IntVar(&cfg.SmallCount, "small-count", cfg.SmallCount, "small files in all (0: skip small-file phases)")
	f.Var(&small, "small-size", "size of each small file")
	f.DurationVar(&cfg.RandDuration, "rand-duration", cfg.RandDuration, "length of the random-read phase (0: skip it)")
	f.Var(&randSize, "rand-size", "size of each random read")
	f.StringVar(&cfg.Cache, "cache", cfg.Cache, "keep reads off the page cache: fadvise, drop (root), direct, none")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the data and of the random offsets")
	f.BoolVar(&cfg.Keep, "keep", false, "leave the benchmark's files in DIR")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&progress, "progress", progress, "progress bar on stderr: auto (when a terminal), always, never")
	return cmd
}
