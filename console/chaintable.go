package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/routing"
)

// chainTableJSON asks for a chain table, as `flyfs admin create-chains`
// does with its flags.
type chainTableJSON struct {
	Nodes        []uint32 `json:"nodes"`
	DisksPerNode int      `json:"disksPerNode"`
	Replicas     int      `json:"replicas"`
	Chains       int      `json:"chains"`
	Layout       string   `json:"layout"`
	Seed         uint64   `json:"seed"`
	FirstChain   uint32   `json:"firstChain"`
}

func (j chainTableJSON) spec() routing.TableSpec {
	s := routing.TableSpec{DisksPerNode: j.DisksPerNode, Replicas: j.Replicas, Chains: j.Chains,
		Layout: j.Layout, Seed: j.Seed, FirstChain: routing.ChainID(j.FirstChain)}
	for _, n := range j.Nodes {
		s.Nodes = append(s.Nodes, routing.NodeID(n))
	}
	return s
}

type newTargetJSON struct {
	ID   uint32 `json:"id"`
	Node uint32 `json:"node"`
	Disk int    `json:"disk"`
}

type newChainJSON struct {
	ID      uint32          `json:"id"`
	Targets []newTargetJSON `json:"targets"`
}

// balanceJSON is routing.Balance: how evenly the table spreads a failed
// disk's reads over the others, beside the ideal and the naive layout.
type balanceJSON struct {
	Text      string  `json:"text"`
	ChainsMin int     `json:"chainsPerDiskMin"`
	ChainsMax int     `json:"chainsPerDiskMax"`
	HeadsMin  int     `json:"headsPerDiskMin"`
	HeadsMax  int     `json:"headsPerDiskMax"`
	Worst     float64 `json:"worst"`
	Ideal     float64 `json:"ideal"`
	Bound     float64 `json:"bound"`
	Simple    float64 `json:"simple"`
}

// handleChainTableDefaults proposes a table over every live storage node:
// its smallest disk count per node, 3 replicas (fewer on a smaller
// cluster), about 8 chains per disk, numbered after the last chain.
func (c *Console) handleChainTableDefaults(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	nodes, err := c.mgmtd.ListNodes(ctx)
	if err != nil {
		clusterDown(w, err)
		return
	}
	info, _, err := c.routingBoot(ctx)
	if err != nil {
		clusterDown(w, err)
		return
	}
	out := chainTableJSON{Nodes: []uint32{}, Layout: "balanced", FirstChain: uint32(info.MaxChainID()) + 1}
	for _, n := range nodes.Nodes {
		if !n.Alive {
			continue
		}
		out.Nodes = append(out.Nodes, uint32(n.Node))
		if d := max(len(n.Disks), 1); out.DisksPerNode == 0 || d < out.DisksPerNode {
			out.DisksPerNode = d
		}
	}
	slices.Sort(out.Nodes)
	out.DisksPerNode = max(out.DisksPerNode, 1)
	out.Replicas = max(min(3, len(out.Nodes)), 1)
	out.Chains = max(routing.ChainsFor(len(out.Nodes)*out.DisksPerNode, out.Replicas, 8), 1)
	writeJSON(w, http.StatusOK, out)
}

// handleChainTable computes a table and its balance figures (POST
// /api/chains/plan) or creates its chains (POST /api/chains), like
// `flyfs admin create-chains [--dry-run]`. A table whose chain or target ids
// exist already is refused (409 exists), never merged into them.
func (c *Console) handleChainTable(create bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body chainTableJSON
		if !readJSON(w, r, &body) {
			return
		}
		table, err := body.spec().Build()
		if err != nil {
			apiError(w, http.StatusBadRequest, "bad_request", err.Error())
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		info, _, err := c.routingBoot(ctx)
		if err != nil {
			clusterDown(w, err)
			return
		}
		if id := table.Overlap(info); id != 0 {
			apiError(w, http.StatusConflict, "exists", fmt.Sprintf("chain %d (or one of its target ids) exists already; start the table after chain %d", id, info.MaxChainID()))
			return
		}
		b := routing.Explain(table.Disks, table.Rows)
		out := map[string]any{
			"chains": newChainsJSON(table.Chains),
			"balance": balanceJSON{Text: b.String(), ChainsMin: b.ChainsMin, ChainsMax: b.ChainsMax, HeadsMin: b.HeadsMin, HeadsMax: b.HeadsMax,
				Worst: b.Worst, Ideal: b.Ideal, Bound: b.Bound, Simple: b.Simple},
			"created": false,
		}
		if create {
			resp, err := c.mgmtd.SetChains(ctx, &mgmtdapi.SetChainsReq{Chains: table.Chains, By: consoleWho(r)})
			if err != nil {
				clusterDown(w, err)
				return
			}
			c.log.Info("console: chains created", "chains", len(table.Chains), "first", body.FirstChain, "by", sessionOf(r).who.AccessKey)
			out["created"], out["routingVersion"] = true, resp.RoutingVersion
		}
		writeJSON(w, http.StatusOK, out)
	}
}

func newChainsJSON(chains []routing.Chain) []newChainJSON {
	out := make([]newChainJSON, 0, len(chains))
	for _, ch := range chains {
		j := newChainJSON{ID: uint32(ch.ID), Targets: []newTargetJSON{}}
		for _, t := range ch.Targets {
			j.Targets = append(j.Targets, newTargetJSON{ID: uint32(t.ID), Node: uint32(t.Node), Disk: t.Disk})
		}
		out = append(out, j)
	}
	return out
}
