package main

import (
	"context"
	"fmt"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/spf13/cobra"
)

// adminWaitCmd waits until the cluster is ready for clients: scripts and
// walk-throughs run it between starting the roles and using them.
func adminWaitCmd(o *adminOptions) *cobra.Command {
	var metads, gateways int
	cmd := &cobra.Command{
		Use:   "wait",
		Short: "Wait until a primary mgmtd serves, every chain serves on all its replicas, and the metad and gateways asked for are registered",
		Long: `Wait until the cluster is ready for clients: a primary mgmtd answers, every chain
has all its targets serving, and at least --metad metadata services (and --gateways
S3 gateways) are registered alive. Gives up after --timeout (default 10s here; give a
longer one right after starting the roles), saying what is still missing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, m, done, err := o.connect(cmd)
			if err != nil {
				return err
			}
			defer done()
			missing := "no answer from any mgmtd yet"
			for {
				if why, err := notReady(ctx, m, metads, gateways); err != nil {
					missing = err.Error()
				} else if why != "" {
					missing = why
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), "cluster ready")
					return nil
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("cluster not ready within %v: %s", o.timeout, missing)
				case <-time.After(300 * time.Millisecond):
				}
			}
		},
	}
	cmd.Flags().IntVar(&metads, "metad", 1, "metadata services that must be registered")
	cmd.Flags().IntVar(&gateways, "gateways", 0, "S3 gateways that must be registered")
	return cmd
}

// notReady says what the cluster still lacks ("" when nothing).
func notReady(ctx context.Context, m *client.Mgmtd, metads, gateways int) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, _, err := adminRouting(cctx, m)
	if err != nil {
		return "", err
	}
	if len(info.Chains) == 0 {
		return "no chains yet (flyfs admin create-chains)", nil
	}
	for id, ch := range info.Chains {
		for _, t := range ch.Targets {
			if t.Public != routing.Serving {
				return fmt.Sprintf("chain %d: target %d on node %d is %s", id, t.ID, t.Node, t.Public), nil
			}
		}
	}
	for _, want := range []struct {
		kind string
		n    int
	}{{mgmtdapi.KindMetad, metads}, {mgmtdapi.KindGateway, gateways}} {
		if want.n <= 0 {
			continue
		}
		resp, err := m.Services(cctx, want.kind)
		if err != nil {
			return "", err
		}
		alive := 0
		for _, s := range resp.Services {
			if s.Alive {
				alive++
			}
		}
		if alive < want.n {
			return fmt.Sprintf("%d of %d %s registered", alive, want.n, want.kind), nil
		}
	}
	return "", nil
}
