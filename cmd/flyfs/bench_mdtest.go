package main

import (
	"log/slog"

	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/bench/load/mdtest"
	"github.com/spf13/cobra"
)

// benchMdtestCmd is the user-facing metadata benchmark of a live cluster.
// `flyfs bench meta` stays the in-process comparison against the local file
// system that earlier work measures with.
func benchMdtestCmd() *cobra.Command {
	cfg := mdtest.Defaults()
	var tok tokenOptions
	var asJSON bool
	progress := "auto"
	cmd := &cobra.Command{
		Use:   "mdtest --mgmtd ADDR",
		Short: "mdtest-style metadata benchmark of a live cluster: create, stat, rename, unlink with many clients",
		Long: `Connects --clients separate clients to the cluster whose managers are at --mgmtd
(each its own connection, as separate hosts would be) and runs --threads workers on
each. Every worker makes --files files in its own directory (--shared-dir: all in one)
under a fresh directory inside --dir, then phase by phase:

  create  create and close of each (an empty file: a write session opened and ended)
  stat    lookup of each by name (its attributes)
  rename  rename of each within its directory
  unlink  unlink of each

and checks the directories are empty at the end. Prints ops/s and p50/p99/p999
latency per phase (--json for a machine-readable report).

'flyfs bench meta' is a different tool: it starts its own in-process cluster and
compares it with the local file system.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			token, err := tok.resolve("flyfs bench mdtest", slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
			if err != nil {
				return err
			}
			cfg.Token = token
			pw, err := bench.ProgressWriter(progress, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cfg.Progress = pw
			rep, err := mdtest.Run(cmd.Context(), cfg)
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
	f.StringSliceVar(&cfg.Mgmtd, "mgmtd", nil, "cluster manager addresses, comma-separated (required)")
	addTokenFlags(f, &tok)
	f.IntVar(&cfg.Clients, "clients", cfg.Clients, "separate client connections")
	f.IntVar(&cfg.Threads, "threads", cfg.Threads, "workers per client")
	f.IntVarP(&cfg.Files, "files", "n", cfg.Files, "files per worker")
	f.StringVar(&cfg.Dir, "dir", cfg.Dir, "namespace directory to work under")
	f.BoolVar(&cfg.SharedDir, "shared-dir", false, "all workers in one directory (default: one directory each)")
	f.BoolVar(&cfg.Keep, "keep", false, "leave the run's directory")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&progress, "progress", progress, "progress bar on stderr: auto (when a terminal), always, never")
	return cmd
}
