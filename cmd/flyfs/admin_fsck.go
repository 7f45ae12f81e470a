package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// adminFsckCmd checks the namespace through a metad found via mgmtd; the KV
// store itself may be locked by a running server, so the check runs there.
func adminFsckCmd(o *adminOptions) *cobra.Command {
	var metads []string
	cmd := &cobra.Command{
		Use:   "fsck",
		Short: "Check the namespace: every entry names a live inode, nlink counts match, no orphans",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, fs, done, err := o.dial(cmd, metads, 0) // a big namespace takes its time
			if err != nil {
				return err
			}
			defer done()
			r, err := fs.Meta().Fsck(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), r.Summary)
			if len(r.Problems) > 0 {
				return fmt.Errorf("fsck found %d problems", len(r.Problems))
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&metads, "metad", nil, "metad addresses (default: the ones registered with mgmtd)")
	return cmd
}
