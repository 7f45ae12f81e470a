package metad_test

import (
	"context"
	"net"
	"testing"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/metad"
	"github.com/flyfs/flyfs/metad/ns"
)

// TestNewFilesPinTheNewestChainTable: files are laid out over the newest
// version of the chain table, with starts spread round-robin; a file keeps
// the version it was created with when a new one is published.
func TestNewFilesPinTheNewestChainTable(t *testing.T) {
	src := routing.NewStatic(&routing.Info{Tables: map[uint32][][]routing.ChainID{1: {{1, 2, 3, 4, 5, 6}}}})
	s, err := metad.New(metad.Config{KV: memkv.Open(kv.Options{}), Routing: src, DefaultStripe: 4, DefaultChunkSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	defer s.Close()
	rc := rpc.NewClient(rpc.Options{})
	defer rc.Close()
	m := metaapi.Client{RPC: rc, Addr: l.Addr().String()}
	ctx := context.Background()
	create := func(i byte) metaapi.Inode {
		t.Helper()
		r, err := m.Create(ctx, &metaapi.CreateReq{ReqID: metaapi.RequestID{i}, Parent: ns.RootID, Name: string('a' + rune(i)), Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		return r.Inode
	}
	starts := map[uint32]int{}
	var first metaapi.Inode
	for i := byte(0); i < 6; i++ {
		in := create(i)
		if i == 0 {
			first = in
		}
		lay := in.Layout
		tbl := layout.ChainTable{ID: 1, Version: 1, Chains: []routing.ChainID{1, 2, 3, 4, 5, 6}}
		if err := lay.Check(tbl); err != nil || lay.Stripe != 4 || lay.ChunkSize != 4<<20 {
			t.Fatalf("file %d has layout %+v: %v", i, lay, err)
		}
		starts[lay.First]++
	}
	if len(starts) < 3 {
		t.Fatalf("six files start at only %d places of the table: %v", len(starts), starts)
	}
	src.Update(func(in *routing.Info) { in.Tables[1] = append(in.Tables[1], []routing.ChainID{1, 2, 3, 4, 5, 6, 7, 8}) })
	if in := create(10); in.Layout.TableVersion != 2 {
		t.Fatalf("a new file after the table grew pins version %d", in.Layout.TableVersion)
	}
	again, err := m.Stat(ctx, first.ID)
	if err != nil || again.Inode.Layout != first.Layout {
		t.Fatalf("an existing file's layout changed: %+v -> %+v (%v)", first.Layout, again.Inode.Layout, err)
	}
}
