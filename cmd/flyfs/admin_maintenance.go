package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/routing"
)

func adminMaintenanceCmd(o *adminOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "maintenance",
		Short: "Put a storage node into maintenance, or end it",
	}
	var yes, dryRun bool
	start := &cobra.Command{
		Use:   "start NODE",
		Short: "Hold offline every target of a node that its chain can spare",
		Long: `Hold offline every target of storage node NODE whose chain keeps a serving
replica without it, chain by chain; a chain's last serving replica is skipped
and named, so maintenance never takes a chain down (run it again once those
chains have recovered elsewhere). Shows what it will do and asks first
(--yes: do not ask; --dry-run: only show). The node's data stays; 'maintenance
end' releases the targets, which rejoin through waiting and syncing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMaintenance(cmd, o, args[0], true, dryRun, yes)
		},
	}
	start.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation")
	start.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be held and change nothing")
	end := &cobra.Command{
		Use:   "end NODE",
		Short: "Release every held target of a node: they rejoin their chains",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMaintenance(cmd, o, args[0], false, false, true)
		},
	}
	cmd.AddCommand(start, end)
	return cmd
}

func runMaintenance(cmd *cobra.Command, o *adminOptions, arg string, held, dryRun, yes bool) error {
	id, err := strconv.ParseUint(arg, 10, 32)
	if err != nil || id == 0 {
		return fmt.Errorf("%q is not a node id", arg)
	}
	node := routing.NodeID(id)
	ctx, m, done, err := o.connect(cmd)
	if err != nil {
		return err
	}
	defer done()
	out := cmd.OutOrStdout()
	if held {
		plan, err := m.SetNodeHeld(ctx, &mgmtdapi.SetNodeHeldReq{Node: node, Held: true, DryRun: true})
		if err != nil {
			return err
		}
		if len(plan.Targets) == 0 {
			return fmt.Errorf("node %d has no targets in any chain", node)
		}
		fmt.Fprintf(out, "Maintenance of node %d would:\n", node)
		printNodeHolds(out, plan.Targets, "hold offline")
		if dryRun {
			return nil
		}
		if !yes {
			fmt.Fprintf(out, "Go ahead? [y/N] ")
			line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
				return errors.New("not confirmed; nothing changed")
			}
		}
	}
	resp, err := m.SetNodeHeld(ctx, &mgmtdapi.SetNodeHeldReq{Node: node, Held: held, By: adminWho()})
	if err != nil {
		return err
	}
	what := "held offline"
	if !held {
		what = "released"
	}
	fmt.Fprintf(out, "node %d (routing version %d):\n", node, resp.RoutingVersion)
	printNodeHolds(out, resp.Targets, what)
	return nil
}

func printNodeHolds(out io.Writer, ts []mgmtdapi.NodeTargetHold, verb string) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TARGET\tCHAIN\t\tCHAIN SERVING AFTER")
	for _, t := range ts {
		what := verb
		if !t.Changed {
			what = "skip: " + t.Skipped
		}
		fmt.Fprintf(tw, "  %d\t%d\t%s\t%d\n", t.Target, t.Chain, what, t.ChainServing)
	}
	tw.Flush()
}

func adminAuditCmd(o *adminOptions) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "The audit trail: admin actions, who asked, when, and how they ended",
		Long: `List the admin actions the cluster manager recorded, newest first: chains set,
targets held or released, node maintenance (from flyfs admin and the console),
and the console's key and namespace changes. Records are kept 90 days.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, m, done, err := o.connect(cmd)
			if err != nil {
				return err
			}
			defer done()
			resp, err := m.ListAudit(ctx, &mgmtdapi.ListAuditReq{Limit: limit})
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "WHEN\tWHO\tACTION\tRESULT")
			for _, r := range resp.Records {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", time.Unix(0, r.At).UTC().Format(time.RFC3339), r.By, r.Action, r.Result)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "how many records (at most 1000)")
	return cmd
}
