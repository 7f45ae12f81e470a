package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/spf13/cobra"
)

// adminOptions are the flags every admin subcommand shares.
type adminOptions struct {
	addrs   []string
	tok     tokenOptions
	token   string // resolved by setup
	timeout time.Duration
}

func adminCmd() *cobra.Command {
	o := &adminOptions{}
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Administer a cluster: services, chains, targets",
		Long: `Administer a cluster through its cluster managers (--mgmtd, any of them: changes
are sent to the primary, found by following redirects).`,
	}
	pf := cmd.PersistentFlags()
	pf.StringSliceVar(&o.addrs, "mgmtd", []string{"127.0.0.1:9000"}, "cluster manager addresses, comma-separated")
	addTokenFlags(pf, &o.tok)
	pf.DurationVar(&o.timeout, "timeout", 10*time.Second, "give up after this long")
	cmd.AddCommand(adminNodesCmd(o), adminChainsCmd(o), adminCreateChainsCmd(o), adminHoldCmd(o, true), adminHoldCmd(o, false))
	cmd.AddCommand(adminFsckCmd(o), adminKeysCmd(o), adminGCCmd(o), adminWaitCmd(o), adminCacheCmd(), adminMaintenanceCmd(o), adminAuditCmd(o), adminTrashCmd(o), adminSnapshotCmd(o))
	return cmd
}

// connect reads the environment into unset flags and returns a caller of
// the cluster managers, bounded by --timeout; done releases it.
func (o *adminOptions) connect(cmd *cobra.Command) (ctx context.Context, m *client.Mgmtd, done func(), err error) {
	if err := o.setup(cmd); err != nil {
		return nil, nil, nil, err
	}
	rc := rpc.NewClient(rpc.Options{Token: o.token, DialTimeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	return ctx, client.NewMgmtd(rc, o.addrs), func() { cancel(); rc.Close() }, nil
}

// setup reads the environment into unset flags, checks --mgmtd and finds
// the cluster token.
func (o *adminOptions) setup(cmd *cobra.Command) error {
	if err := bindEnv(cmd); err != nil {
		return err
	}
	if len(o.addrs) == 0 {
		return errors.New("no --mgmtd address")
	}
	t, err := o.tok.resolve("flyfs admin", slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
	o.token = t
	return err
}

// dial sets up as setup does and connects a client of the cluster (bound to
// metads when given), under a context that ends after bound (0: never);
// done closes both.
func (o *adminOptions) dial(cmd *cobra.Command, metads []string, bound time.Duration) (context.Context, *client.FS, func(), error) {
	if err := o.setup(cmd); err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := cmd.Context(), context.CancelFunc(func() {})
	if bound > 0 {
		ctx, cancel = context.WithTimeout(ctx, bound)
	}
	fs, err := client.Dial(ctx, client.Config{Mgmtd: o.addrs, Token: o.token, Metad: metads, MetaRetry: o.timeout})
	if err != nil {
		cancel()
		return nil, nil, nil, fmt.Errorf("reach the cluster at %v (check --mgmtd and the token): %w", o.addrs, err)
	}
	return ctx, fs, func() { fs.Close(); cancel() }, nil
}

// adminRouting fetches the newest routing from any mgmtd. While none
// answers (they are still starting: a script runs admin commands right
// after them) it asks again until the command's --timeout.
func adminRouting(ctx context.Context, m *client.Mgmtd) (*routing.Info, bool, error) {
	resp, err := m.GetRouting(ctx, 0)
	for err != nil && errors.Is(err, client.ErrNoMgmtd) && rpc.CodeOf(err) == rpc.Unavailable {
		select {
		case <-ctx.Done():
			return nil, false, err
		case <-time.After(200 * time.Millisecond):
		}
		resp, err = m.GetRouting(ctx, 0)
	}
	if err != nil {
		return nil, false, err
	}
	if resp.Info == nil {
		return nil, false, errors.New("the cluster manager sent no routing")
	}
	return resp.Info, resp.Bootstrapping, nil
}

func adminNodesCmd(o *adminOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "nodes",
		Short: "List every role: storage nodes with state and last heartbeat, cluster managers with the primary, and the registered services (metad, gateways, consoles, clients such as mounts)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, m, done, err := o.connect(cmd)
			if err != nil {
				return err
			}
			defer done()
			resp, err := m.ListNodes(ctx)
			if err != nil {
				return err
			}
			printNodes(cmd.OutOrStdout(), resp, time.Now())
			svcs, err := m.Services(ctx, "")
			if err != nil {
				return fmt.Errorf("registered services: %w", err)
			}
			printServices(cmd.OutOrStdout(), svcs, time.Now())
			return nil
		},
	}
}

// printNodes renders ListNodes as two tables.
func printNodes(out io.Writer, resp *mgmtdapi.ListNodesResp, now time.Time) {
	fmt.Fprintln(out, "STORAGE NODES")
	if resp.Partial {
		fmt.Fprintln(out, "(no primary mgmtd is elected: liveness unknown)")
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tADDRESS\tSTATE\tLAST HEARTBEAT\tTARGETS\tDISKS")
	for _, n := range resp.Nodes {
		state, last := "failed", "never"
		switch {
		case resp.Partial:
			state = "unknown"
		case n.Alive:
			state = "alive"
		case n.LastHeartbeat == 0:
			state = "no heartbeat"
		}
		if n.LastHeartbeat != 0 {
			last = now.Sub(time.Unix(0, n.LastHeartbeat)).Round(100*time.Millisecond).String() + " ago"
		}
		var targets []string
		for _, t := range n.Targets {
			targets = append(targets, fmt.Sprintf("%d %s", t.Target, t.Local))
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", n.Node, adminDash(n.Addr), state, last, adminDash(strings.Join(targets, ", ")), diskSummary(n))
	}
	w.Flush()
	fmt.Fprintln(out)
	fmt.Fprintln(out, "CLUSTER MANAGERS")
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tADDRESS\tROLE")
	for _, m := range resp.Mgmtds {
		role := "standby"
		if m.Primary {
			role = "primary"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", m.ID, m.Addr, role)
	}
	w.Flush()
}

// printServices renders the services registered with mgmtd.
func printServices(out io.Writer, resp *mgmtdapi.ListServicesResp, now time.Time) {
	fmt.Fprintln(out)
	fmt.Fprintln(out, "SERVICES")
	if !resp.Complete {
		fmt.Fprintln(out, "(the primary mgmtd is new: a live service may not have registered again yet)")
	}
	svcs := slices.Clone(resp.Services)
	slices.SortFunc(svcs, func(a, b mgmtdapi.ServiceStatus) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID))
	})
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KIND\tID\tADDRESS\tSTATE\tLAST SEEN")
	for _, s := range svcs {
		state := "gone"
		if s.Alive {
			state = "alive"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s ago\n", s.Kind, s.ID, adminDash(s.Addr), state, now.Sub(time.Unix(0, s.LastSeen)).Round(100*time.Millisecond))
	}
	w.Flush()
}

// diskSummary is a node's disks: their data files, then the free space
// and capacity of the file systems under them (one several disks share
// counted once) with its use as df counts it, and disks over 90 %.
func diskSummary(n mgmtdapi.NodeStatus) string {
	ds := n.Disks
	if len(ds) == 0 {
		return "-"
	}
	var used uint64
	ro, full, almost, enc := 0, 0, 0, 0
	for _, d := range ds {
		used += d.UsedBytes
		if d.Encrypted {
			enc++
		}
		if d.ReadOnly {
			ro++
		}
		if d.Full {
			full++
		}
		if f, ok := d.UsedFraction(); ok && f > 0.9 && !d.Full {
			almost++
		}
	}
	sp := mgmtdapi.SpaceOf([]mgmtdapi.NodeStatus{n})
	s := fmt.Sprintf("%d: %s used", len(ds), adminBytes(used))
	if sp.FreeBytes > 0 {
		s += ", " + adminBytes(sp.FreeBytes) + " free"
	}
	if sp.CapacityKnown {
		s += fmt.Sprintf(" of %s (%.1f %% used)", adminBytes(sp.CapacityBytes), 100*(1-float64(min(sp.FreeBytes, sp.CapacityBytes))/float64(sp.CapacityBytes)))
	}
	if sp.FileSystems < len(ds) {
		s += fmt.Sprintf(" on %d file system(s)", sp.FileSystems)
	}
	if almost > 0 {
		s += fmt.Sprintf(", %d over 90 %% used", almost)
	}
	if full > 0 {
		s += fmt.Sprintf(", %d full (writes refused until space returns)", full)
	}
	if ro > 0 {
		s += fmt.Sprintf(", %d read-only (write error)", ro)
	}
	switch enc {
	case len(ds):
		s += ", encrypted at rest"
	case 0:
	default:
		s += fmt.Sprintf(", %d of %d encrypted at rest", enc, len(ds))
	}
	return s
}

func adminBytes(b uint64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	exp := int(math.Log(float64(b)) / math.Log(unit))
	exp = min(exp, 6)
	return fmt.Sprintf("%.1f %ciB", float64(b)/math.Pow(unit, float64(exp)), "KMGTPE"[exp-1])
}

func adminDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func adminChainsCmd(o *adminOptions) *cobra.Command {
	var explain bool
	cmd := &cobra.Command{
		Use:   "chains",
		Short: "List every chain: version, targets in order with public and local state; degraded chains first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, m, done, err := o.connect(cmd)
			if err != nil {
				return err
			}
			defer done()
			info, boot, err := adminRouting(ctx, m)
			if err != nil {
				return err
			}
			printChains(cmd.OutOrStdout(), info, boot, true)
			if explain {
				disks, table := placementOf(info)
				fmt.Fprintln(cmd.OutOrStdout(), routing.Explain(disks, table))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&explain, "explain", false, "also measure how evenly the table spreads a failed disk's reads")
	return cmd
}

// chainDegraded reports whether a chain has a target that does not serve.
func chainDegraded(c *routing.Chain) bool {
	return slices.ContainsFunc(c.Targets, func(t routing.Target) bool { return t.Public != routing.Serving })
}

// printChains renders the chains, degraded ones first, then by id, under a
// summary line when header is set.
func printChains(out io.Writer, info *routing.Info, bootstrapping, header bool) {
	chains := make([]*routing.Chain, 0, len(info.Chains))
	nDegraded := 0
	for _, c := range info.Chains {
		chains = append(chains, c)
		if chainDegraded(c) {
			nDegraded++
		}
	}
	slices.SortFunc(chains, func(a, b *routing.Chain) int {
		if da, db := chainDegraded(a), chainDegraded(b); da != db {
			if da {
				return -1
			}
			return 1
		}
		return int(a.ID) - int(b.ID)
	})
	note := ""
	if bootstrapping {
		note = " (a new primary is still hearing from every node)"
	}
	if header {
		fmt.Fprintf(out, "routing version %d: %d chains, %d degraded%s\n", info.Version, len(chains), nDegraded, note)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CHAIN\tVERSION\tSTATE\tTARGETS (head first: id@node/disk public/local)")
	for _, c := range chains {
		state := "ok"
		if chainDegraded(c) {
			state = "degraded"
		}
		var ts []string
		for _, t := range c.Targets {
			ts = append(ts, fmt.Sprintf("%d@%d/%d %s/%s", t.ID, t.Node, t.Disk, t.Public, t.Local))
		}
		fmt.Fprintf(w, "%d\t%d\t%s\t%s\n", c.ID, c.Version, state, strings.Join(ts, "  "))
	}
	w.Flush()
}

// placementOf maps routing to the placement functions' terms: the disks
// (every distinct node and disk a target names, in order) and each chain (by
// id) as the indices of its targets' disks, head first.
func placementOf(info *routing.Info) ([]routing.Disk, [][]int) {
	index := map[routing.Disk]int{}
	var disks []routing.Disk
	for _, c := range info.Chains {
		for _, t := range c.Targets {
			d := routing.Disk{Node: t.Node, Index: t.Disk}
			if _, ok := index[d]; !ok {
				index[d] = 0
				disks = append(disks, d)
			}
		}
	}
	slices.SortFunc(disks, func(a, b routing.Disk) int {
		if a.Node != b.Node {
			return int(a.Node) - int(b.Node)
		}
		return a.Index - b.Index
	})
	for i, d := range disks {
		index[d] = i
	}
	ids := make([]routing.ChainID, 0, len(info.Chains))
	for id := range info.Chains {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	table := make([][]int, 0, len(ids))
	for _, id := range ids {
		var row []int
		for _, t := range info.Chains[id].Targets {
			row = append(row, index[routing.Disk{Node: t.Node, Index: t.Disk}])
		}
		table = append(table, row)
	}
	return disks, table
}

// createChainsOptions are the flags of `admin create-chains`.
type createChainsOptions struct {
	nodes        []string
	disksPerNode int
	replicas     int
	chains       int
	layout       string
	seed         uint64
	firstChain   uint32
	dryRun       bool
}

func adminCreateChainsCmd(o *adminOptions) *cobra.Command {
	var c createChainsOptions
	cmd := &cobra.Command{
		Use:   "create-chains",
		Short: "Compute a chain table over storage nodes' disks and create its chains",
		Long: `Compute a chain table over the disks of --nodes (each with --disks-per-node disks,
indices 0..n-1) and create its chains, numbered from --first-chain.

Target ids: chain id * 100 + replica position + 1 (chain 7's targets are 701, 702,
703, head first as created), so at most 99 replicas and chain ids below 42,949,672.
Storage services started with --mgmtd learn their targets from these chains; only one
run by hand (--routing-file) is given its targets with --target ID:CHAIN:DISK.

--layout balanced (default) spreads a failed disk's reads evenly over the other
disks (routing.BalancedLayout, deterministic for a --seed); simple is the naive
baseline. The table and its balance figures are printed; --dry-run stops there.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, m, done, err := o.connect(cmd)
			if err != nil {
				return err
			}
			defer done()
			chains, disks, table, err := c.build()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			printNewChains(out, chains)
			fmt.Fprintln(out, routing.Explain(disks, table))
			if c.dryRun {
				fmt.Fprintln(out, "dry run: nothing created")
				return nil
			}
			info, _, err := adminRouting(ctx, m)
			if err != nil {
				return err
			}
			if id := (routing.NewTable{Chains: chains}).Overlap(info); id != 0 {
				return fmt.Errorf("chain %d exists already; choose a --first-chain above %d", id, info.MaxChainID())
			}
			resp, err := m.SetChains(ctx, &mgmtdapi.SetChainsReq{Chains: chains, By: adminWho()})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "created %d chains (routing version %d)\n", len(chains), resp.RoutingVersion)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&c.nodes, "nodes", nil, "storage node ids, comma-separated (required)")
	f.IntVar(&c.disksPerNode, "disks-per-node", 1, "disks per node")
	f.IntVar(&c.replicas, "replicas", 3, "targets per chain")
	f.IntVar(&c.chains, "chains", 0, "number of chains (required)")
	f.StringVar(&c.layout, "layout", "balanced", "placement: balanced or simple")
	f.Uint64Var(&c.seed, "seed", 0, "balanced layout: seed of its search")
	f.Uint32Var(&c.firstChain, "first-chain", 1, "id of the first chain")
	f.BoolVar(&c.dryRun, "dry-run", false, "print the table without creating it")
	return cmd
}

// build computes the chains, with the disks and table they came from.
func (c *createChainsOptions) build() ([]routing.Chain, []routing.Disk, [][]int, error) {
	if len(c.nodes) == 0 {
		return nil, nil, nil, errors.New("--nodes is required: the storage node ids to place chains on")
	}
	if c.chains < 1 {
		return nil, nil, nil, errors.New("--chains is required: how many chains to create")
	}
	spec := routing.TableSpec{DisksPerNode: c.disksPerNode, Replicas: c.replicas, Chains: c.chains,
		Layout: c.layout, Seed: c.seed, FirstChain: routing.ChainID(c.firstChain)}
	for _, s := range c.nodes {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--nodes: %q is not a node id", s)
		}
		spec.Nodes = append(spec.Nodes, routing.NodeID(n))
	}
	t, err := spec.Build()
	if err != nil {
		return nil, nil, nil, err
	}
	return t.Chains, t.Disks, t.Rows, nil
}

func printNewChains(out io.Writer, chains []routing.Chain) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CHAIN\tTARGETS (head first: id@node/disk)")
	for _, c := range chains {
		var ts []string
		for _, t := range c.Targets {
			ts = append(ts, fmt.Sprintf("%d@%d/%d", t.ID, t.Node, t.Disk))
		}
		fmt.Fprintf(w, "%d\t%s\n", c.ID, strings.Join(ts, "  "))
	}
	w.Flush()
}

// adminHoldCmd is offline-target (hold) or online-target (release).
func adminHoldCmd(o *adminOptions, hold bool) *cobra.Command {
	var yes, force bool
	use, short := "online-target ID", "Release a target held offline: it rejoins its chain through waiting and syncing"
	if hold {
		use, short = "offline-target ID", "Take a target offline by hand (it moves to the tail of its chain) until online-target"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseUint(args[0], 10, 32)
			if err != nil {
				return fmt.Errorf("%q is not a target id", args[0])
			}
			target := routing.TargetID(id)
			ctx, m, done, err := o.connect(cmd)
			if err != nil {
				return err
			}
			defer done()
			out := cmd.OutOrStdout()
			info, _, err := adminRouting(ctx, m)
			if err != nil {
				return err
			}
			c := adminChainOf(info, target)
			if c == nil {
				return fmt.Errorf("no chain has target %d", target)
			}
			if hold && !yes {
				t := c.Targets[c.Index(target)]
				fmt.Fprintf(out, "Target %d (chain %d, node %d disk %d) is %s. Hold it offline? Chain %d loses this replica until online-target %d. [y/N] ",
					target, c.ID, t.Node, t.Disk, t.Public, c.ID, target)
				line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
					return errors.New("not confirmed; nothing changed")
				}
			}
			resp, err := m.SetTargetHeld(ctx, &mgmtdapi.SetTargetHeldReq{Target: target, Held: hold, Force: force, By: adminWho()})
			if rpc.CodeOf(err) == mgmtdapi.CodeLastServing {
				return fmt.Errorf("target %d is the last serving replica of chain %d: taking it offline stops every read and write of the chain's files until online-target %d; nothing changed (--force to do it anyway)", target, c.ID, target)
			}
			if err != nil {
				return err
			}
			if after, _, err := adminRouting(ctx, m); err == nil {
				c = adminChainOf(after, target)
			}
			what := "is held offline"
			if !hold {
				what = "is released; it rejoins as its node reports it"
			}
			fmt.Fprintf(out, "target %d %s (routing version %d)\n", target, what, resp.RoutingVersion)
			if c != nil {
				printChains(out, &routing.Info{Chains: map[routing.ChainID]*routing.Chain{c.ID: c}}, false, false)
			}
			return nil
		},
	}
	if hold {
		cmd.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation")
		cmd.Flags().BoolVar(&force, "force", false, "hold it even if it is its chain's last serving replica (the chain then serves nothing until online-target)")
	}
	return cmd
}

// adminWho names who runs flyfs admin, for the audit trail: the cluster
// token says only that the caller may, not who it is.
func adminWho() string {
	name := "unknown user"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("flyfs admin: %s@%s", name, host)
}

// audit records an action flyfs admin did through metad (mgmtd records
// its own): who, what, and how it ended. A failure to record is reported,
// not fatal: the action has happened.
func (o *adminOptions) audit(cmd *cobra.Command, action string, result error) {
	ctx, m, done, err := o.connect(cmd)
	if err == nil {
		defer done()
		res := "ok"
		if result != nil {
			res = result.Error()
		}
		err = m.Audit(ctx, mgmtdapi.AuditRecord{By: adminWho(), Action: action, Result: res})
	}
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: not recorded in the audit trail: %v\n", err)
	}
}

func adminChainOf(info *routing.Info, target routing.TargetID) *routing.Chain {
	for _, c := range info.Chains {
		if c.Index(target) >= 0 {
			return c
		}
	}
	return nil
}
