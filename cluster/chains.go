package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/routing"
)

// ensureChains creates the cluster's chains when routing has none: chain c
// on Replicas consecutive nodes starting at node c, so heads spread over
// every node. Target ids are chain*100 + replica.
func (c *Cluster) ensureChains(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m := c.MgmtdClient()
	var last error
	for {
		if info, err := c.Routing(ctx); err == nil && len(info.Chains) > 0 {
			return nil
		} else if err != nil {
			last = err
		} else if _, err := m.SetChains(ctx, initialChains(c.cfg)); err == nil {
			return nil
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: create the chains: %w", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// initialChains is the chain table of a new cluster.
func initialChains(cfg Config) *mgmtdapi.SetChainsReq {
	req := &mgmtdapi.SetChainsReq{}
	for ch := 1; ch <= cfg.Chains; ch++ {
		chain := routing.Chain{ID: routing.ChainID(ch), Version: 1}
		for r := 0; r < cfg.Replicas; r++ {
			node := routing.NodeID((ch-1+r)%cfg.Nodes + 1)
			chain.Targets = append(chain.Targets, routing.Target{ID: routing.TargetID(ch*100 + r + 1), Node: node,
				Public: routing.Serving, Local: routing.UpToDate})
		}
		req.Chains = append(req.Chains, chain)
	}
	return req
}
