package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/posix/native"
)

func adminCacheCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "A running mount's cache of file data",
	}
	var asJSON bool
	stats := &cobra.Command{
		Use:   "stats MOUNTPOINT",
		Short: "Show a running mount's cache tiers: size, use, hits, misses, evictions",
		Long: `Show the cache tiers of the flyfs mount at MOUNTPOINT (--cache-mem, --cache-dir):
capacity, bytes held, hits, misses and hit ratio, evictions, blocks that failed
their checksum, and for the disk tier the blocks left unwritten because its writer
was behind and the writes the local disk failed. The mount serves the counters
in MOUNTPOINT/.flyfs/cache (JSON, as --json prints).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := flyfsMountOf(args[0])
			if err != nil {
				return err
			}
			b, err := os.ReadFile(filepath.Join(root, native.VirtDir, "cache"))
			if err != nil {
				return fmt.Errorf("the cache counters of %s: %w", root, err)
			}
			if asJSON {
				_, err := cmd.OutOrStdout().Write(b)
				return err
			}
			var s client.CacheStats
			if err := json.Unmarshal(b, &s); err != nil {
				return fmt.Errorf("the cache counters of %s: %w", root, err)
			}
			printCacheStats(cmd.OutOrStdout(), root, s)
			return nil
		},
	}
	stats.Flags().BoolVar(&asJSON, "json", false, "print the counters as the mount serves them (JSON)")
	cmd.AddCommand(stats)
	return cmd
}

func printCacheStats(out io.Writer, mount string, s client.CacheStats) {
	if s.Memory.Capacity == 0 && s.Disk.Capacity == 0 {
		fmt.Fprintf(out, "%s has no cache (mount it with --cache-mem or --cache-dir)\n", mount)
		return
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIER\tCAPACITY\tUSED\tHITS\tMISSES\tHIT RATIO\tEVICTIONS\tCORRUPT\tSKIPPED\tFAILED")
	for _, t := range []struct {
		name string
		s    client.TierStats
	}{{"memory", s.Memory}, {"disk", s.Disk}} {
		if t.s.Capacity == 0 {
			fmt.Fprintf(tw, "%s\tnone\t\t\t\t\t\t\t\t\n", t.name)
			continue
		}
		ratio := "-"
		if n := t.s.Hits + t.s.Misses; n > 0 {
			ratio = fmt.Sprintf("%.1f%%", 100*float64(t.s.Hits)/float64(n))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\n", t.name, humanize.IBytes(uint64(t.s.Capacity)),
			humanize.IBytes(uint64(t.s.Used)), t.s.Hits, t.s.Misses, ratio, t.s.Evictions, t.s.Corrupt, t.s.Skipped, t.s.Failed)
	}
	tw.Flush()
	if s.Dir != "" {
		fmt.Fprintf(out, "disk tier in %s\n", s.Dir)
	}
}
