package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// adminGCCmd runs a collection of removed files now, through a metad.
func adminGCCmd(o *adminOptions) *cobra.Command {
	var noGrace bool
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Collect removed files now (their chunks and inodes) and report what was freed",
		Long: `Run garbage collection now on a metadata service: removed files past their grace
period (metad's --gc-grace, 5 minutes by default) have their chunks deleted from every
replica and their inodes removed. --no-grace takes files still in their grace period
too, to free space at once (a reader that has such a file open then loses it).
Prints the files and bytes freed and what stays queued (files in their grace, files
still open, entries another metad is collecting).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, fs, done, err := o.dial(cmd, nil, o.timeout)
			if err != nil {
				return err
			}
			defer done()
			r, err := fs.Meta().Collect(ctx, noGrace)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "freed %d files, %s; %d entries still queued\n", r.Files, adminBytes(r.Bytes), r.QueueLeft)
			return nil
		},
	}
	cmd.Flags().BoolVar(&noGrace, "no-grace", false, "also collect removed files still in their grace period")
	return cmd
}
