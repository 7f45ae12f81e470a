package multihost

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
)

// probe is a file with one small piece in each of its first chunks, so it
// has a chunk on every chain; tests read those chunks straight from one
// replica, bypassing the client, to see what that replica serves.
type probe struct {
	t      testing.TB
	c      *Cluster
	fs     *client.FS
	path   string
	in     metaapi.Inode
	chunks int
}

const probeLen = 64

func newProbe(t testing.TB, c *Cluster, fs *client.FS, path string, fill byte) *probe {
	t.Helper()
	p := &probe{t: t, c: c, fs: fs, path: path, chunks: 2 * c.cfg.Chains}
	if err := p.write(fill); err != nil {
		t.Fatalf("probe %s: %v", path, err)
	}
	in, err := fs.Stat(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	p.in = in
	return p
}

// write overwrites the piece of every chunk with fill.
func (p *probe) write(fill byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	f, err := p.fs.OpenFile(ctx, p.path, 0x41 /* O_WRONLY|O_CREATE */, 0o644)
	if err != nil {
		return err
	}
	cs := uint64(f.Inode().Layout.ChunkSize)
	for k := 0; k < p.chunks; k++ {
		if _, err := f.WriteAtContext(ctx, bytes.Repeat([]byte{fill}, probeLen), int64(uint64(k)*cs)); err != nil {
			f.CloseContext(ctx)
			return err
		}
	}
	return f.CloseContext(ctx)
}

// probeRead is what one replica answered for one chunk.
type probeRead struct {
	chain routing.ChainID
	chunk layout.ChunkID
	fill  byte // the byte served, when err is nil
	err   error
}

func (r probeRead) String() string {
	if r.err != nil {
		return fmt.Sprintf("chain %d chunk %v: refused (%v)", r.chain, r.chunk, r.err)
	}
	return fmt.Sprintf("chain %d chunk %v: served %q", r.chain, r.chunk, r.fill)
}

// readFrom reads, straight from storage node i (0-based), each probe chunk
// that node holds a replica of, naming the chain version of info (an old
// routing is what a client that has not caught up would send).
func (p *probe) readFrom(ctx context.Context, info *routing.Info, i int) []probeRead {
	l := p.in.Layout
	list, ok := info.Table(l.TableID, l.TableVersion)
	if !ok {
		p.t.Fatalf("chain table %d v%d not in routing", l.TableID, l.TableVersion)
	}
	table := layout.ChainTable{ID: l.TableID, Version: l.TableVersion, Chains: list}
	api := storageapi.Client{RPC: p.c.rc}
	addr := p.c.StoragedAddr(i)
	var out []probeRead
	for k := 0; k < p.chunks; k++ {
		cid, err := l.Chain(table, uint64(k))
		if err != nil {
			p.t.Fatal(err)
		}
		chain, _ := info.Chain(cid)
		holds := false
		for _, tg := range chain.Targets {
			holds = holds || tg.Node == routing.NodeID(i+1)
		}
		if !holds {
			continue
		}
		chunk := l.ChunkID(p.in.ID, uint64(k)*uint64(l.ChunkSize))
		r := probeRead{chain: cid, chunk: chunk}
		resp, data, err := api.BatchRead(ctx, addr, &storageapi.BatchReadReq{IOs: []storageapi.ReadIO{{
			Key: storageapi.Key{Chain: uint32(cid), ChainVer: chain.Version, Chunk: chunk}, Length: probeLen}}})
		switch {
		case err != nil:
			r.err = err
		case resp.Results[0].Err() != nil:
			r.err = resp.Results[0].Err()
		case len(data) == 0:
			r.err = fmt.Errorf("empty read")
		default:
			r.fill = data[0]
		}
		out = append(out, r)
	}
	return out
}

// expectFrom checks that node i serves fill for every probe chunk it holds,
// giving it a few seconds to learn the newest routing (it polls mgmtd).
func (p *probe) expectFrom(i int, fill byte, when string) {
	p.t.Helper()
	var bad []probeRead
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		bad = bad[:0]
		for _, r := range p.readFrom(ctx, p.c.Routing(), i) {
			if r.err != nil || r.fill != fill {
				bad = append(bad, r)
			}
		}
		cancel()
		if len(bad) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, r := range bad {
		p.t.Errorf("%s storaged%d: %v, want %q", when, i+1, r, fill)
	}
}
