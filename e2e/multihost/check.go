package multihost

import (
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
)

// replicaChunk is one chunk as one replica holds it: its metadata and the
// CRC32C of its bytes as read from that replica.
type replicaChunk struct {
	meta    storageapi.ChunkMeta
	dataCRC uint32
	readErr string
}

func (r replicaChunk) String() string {
	s := fmt.Sprintf("commit %d update %d len %d crc %08x", r.meta.CommitVer, r.meta.UpdateVer, r.meta.Len, r.meta.Checksum)
	if r.readErr != "" {
		return s + " read: " + r.readErr
	}
	return s + fmt.Sprintf(" data crc %08x", r.dataCRC)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// dumpReplica lists every chunk of a chain on one replica, reading each
// chunk's bytes from that replica when withData is set.
func (c *Cluster) dumpReplica(ctx context.Context, addr string, chain *routing.Chain, withData bool) (map[layout.ChunkID]replicaChunk, error) {
	api := storageapi.Client{RPC: c.rc}
	out := map[layout.ChunkID]replicaChunk{}
	var begin layout.ChunkID
	for {
		resp, err := api.DumpChunkMeta(ctx, addr, &storageapi.ChunkRange{Chain: uint32(chain.ID), Begin: begin, Max: 4096})
		if err != nil {
			return nil, err
		}
		for _, m := range resp.Metas {
			out[m.Chunk] = replicaChunk{meta: m}
		}
		if !resp.More || len(resp.Metas) == 0 {
			break
		}
		begin = resp.Metas[len(resp.Metas)-1].Chunk.Next()
	}
	if !withData {
		return out, nil
	}
	for id, rc := range out {
		if rc.meta.Len == 0 {
			continue
		}
		resp, data, err := api.BatchRead(ctx, addr, &storageapi.BatchReadReq{IOs: []storageapi.ReadIO{{
			Key: storageapi.Key{Chain: uint32(chain.ID), ChainVer: chain.Version, Chunk: id}, Length: rc.meta.Len}}})
		switch {
		case err != nil:
			rc.readErr = err.Error()
		case resp.Results[0].Err() != nil:
			rc.readErr = resp.Results[0].Err().Error()
		default:
			rc.dataCRC = crc32.Checksum(data, castagnoli)
		}
		out[id] = rc
	}
	return out, nil
}

// Divergence compares every chain's replicas: the same chunks with the same
// committed version, length and checksum, nothing pending, and (withData)
// the same bytes read back from each. It returns the differences found.
func (c *Cluster) Divergence(ctx context.Context, withData bool) []string {
	info := c.Routing()
	var diffs []string
	ids := make([]routing.ChainID, 0, len(info.Chains))
	for id := range info.Chains {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		chain := info.Chains[id]
		var first map[layout.ChunkID]replicaChunk
		var firstNode routing.NodeID
		for _, tg := range chain.Targets {
			if tg.Public != routing.Serving {
				diffs = append(diffs, fmt.Sprintf("chain %d: target %d on node %d is %v", id, tg.ID, tg.Node, tg.Public))
				continue
			}
			addr, _ := info.Addr(tg.Node)
			dump, err := c.dumpReplica(ctx, addr, chain, withData)
			if err != nil {
				diffs = append(diffs, fmt.Sprintf("chain %d node %d: dump: %v", id, tg.Node, err))
				continue
			}
			for chunk, rc := range dump {
				if rc.meta.UpdateVer != rc.meta.CommitVer {
					diffs = append(diffs, fmt.Sprintf("chain %d node %d chunk %v: pending (%v)", id, tg.Node, chunk, rc))
				}
				if rc.readErr != "" {
					diffs = append(diffs, fmt.Sprintf("chain %d node %d chunk %v: %v", id, tg.Node, chunk, rc))
				}
			}
			if first == nil {
				first, firstNode = dump, tg.Node
				continue
			}
			for chunk, a := range first {
				b, ok := dump[chunk]
				switch {
				case !ok:
					diffs = append(diffs, fmt.Sprintf("chain %d chunk %v: on node %d (%v), missing on node %d", id, chunk, firstNode, a, tg.Node))
				case a.meta.CommitVer != b.meta.CommitVer || a.meta.Len != b.meta.Len || a.meta.Checksum != b.meta.Checksum ||
					(withData && a.dataCRC != b.dataCRC):
					diffs = append(diffs, fmt.Sprintf("chain %d chunk %v: node %d has %v, node %d has %v", id, chunk, firstNode, a, tg.Node, b))
				}
			}
			for chunk, b := range dump {
				if _, ok := first[chunk]; !ok {
					diffs = append(diffs, fmt.Sprintf("chain %d chunk %v: on node %d (%v), missing on node %d", id, chunk, tg.Node, b, firstNode))
				}
			}
		}
	}
	return diffs
}

// CheckConverged waits (up to d, for recovery to finish) until every chain
// serves on all replicas and they hold identical chunks, byte for byte.
func (c *Cluster) CheckConverged(t testing.TB, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(d)
	var diffs []string
	for {
		diffs = c.Divergence(ctx, false)
		if len(diffs) == 0 {
			// Metadata agrees: now compare the bytes themselves.
			if diffs = c.Divergence(ctx, true); len(diffs) == 0 {
				chunks := 0
				for _, ch := range c.Routing().Chains {
					if len(ch.Targets) > 0 {
						addr, _ := c.Routing().Addr(ch.Targets[0].Node)
						if d, err := c.dumpReplica(ctx, addr, ch, false); err == nil {
							chunks += len(d)
						}
					}
				}
				t.Logf("replicas converged: %d chunks identical on every replica of %d chains", chunks, len(c.Routing().Chains))
				return
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(diffs) > 20 {
		diffs = append(diffs[:20], fmt.Sprintf("... and %d more", len(diffs)-20))
	}
	t.Errorf("replicas did not converge within %v:\n  %s", d, strings.Join(diffs, "\n  "))
}

// AWS runs /usr/bin/aws against the gateway with the root keys (no CA
// bundle: the gateway speaks plain HTTP here).
func (c *Cluster) AWS(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/aws", append([]string{"--endpoint-url", c.GatewayURL}, args...)...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+c.AccessKey, "AWS_SECRET_ACCESS_KEY="+c.SecretKey,
		"AWS_DEFAULT_REGION=us-east-1", "AWS_CA_BUNDLE=", "AWS_EC2_METADATA_DISABLED=true", "AWS_MAX_ATTEMPTS=10",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
