package console

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/metad"
	"github.com/flyfs/flyfs/metad/keys"
	"github.com/flyfs/flyfs/mgmtd"
)

// bigCluster starts one real mgmtd with n chains of 3 targets on 30 storage
// nodes that never run (every target ends offline or lastsrv): the routing
// a console of a cluster with thousands of chains has to page through.
func bigCluster(tb testing.TB, n int) (addr string, rc *rpc.Client, fs *client.FS) {
	tb.Helper()
	db := memkv.Open(kv.Options{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := mgmtd.New(mgmtd.Config{ID: "m1", Addr: l.Addr().String(), KV: db, HeartbeatTimeout: 500 * time.Millisecond,
		ScanInterval: 100 * time.Millisecond, Logger: quiet, RPC: rpc.Options{Logger: quiet}})
	if err != nil {
		tb.Fatal(err)
	}
	go srv.Serve(l)
	tb.Cleanup(func() { srv.Close() })
	rc = rpc.NewClient(rpc.Options{Logger: quiet})
	tb.Cleanup(func() { rc.Close() })
	m := client.NewMgmtd(rc, []string{l.Addr().String()})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for first := 1; first <= n; first += 1000 {
		req := &mgmtdapi.SetChainsReq{}
		for id := first; id < first+1000 && id <= n; id++ {
			ch := routing.Chain{ID: routing.ChainID(id), Version: 1}
			for r := 0; r < 3; r++ {
				ch.Targets = append(ch.Targets, routing.Target{ID: routing.TargetID(id*100 + r + 1), Node: routing.NodeID((id+r)%30 + 1),
					Public: routing.Serving, Local: routing.UpToDate})
			}
			req.Chains = append(req.Chains, ch)
		}
		for {
			if _, err := m.SetChains(ctx, req); err == nil {
				break
			} else if ctx.Err() != nil {
				tb.Fatalf("set chains: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// A metadata service on the same store holds the access keys.
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	md, err := metad.New(metad.Config{KV: db, Logger: quiet, RPC: rpc.Options{Logger: quiet}, Mgmtd: m, Addr: ml.Addr().String(),
		MasterKey: bytes.Repeat([]byte{1}, keys.MasterKeySize)})
	if err != nil {
		tb.Fatal(err)
	}
	go md.Serve(ml)
	tb.Cleanup(func() { md.Close() })
	fs, err = client.Dial(ctx, client.Config{Mgmtd: []string{l.Addr().String()}, Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fs.Close() })
	return l.Addr().String(), rc, fs
}

// TestManyChainsPaged pages through 5000 chains: every chain once, in order
// (unavailable, then degraded, then ok; by id within each), 1000 at most a page.
func TestManyChainsPaged(t *testing.T) {
	const n = 5000
	addr, rc, fs := bigCluster(t, n)
	r := newRig(t, rigConfig{mgmtd: []string{addr}, rc: rc, fs: fs})
	b := r.browser()
	b.signIn(r.admin)
	seen := map[uint32]bool{}
	rank := map[string]int{"unavailable": 0, "degraded": 1, "ok": 2}
	lastRank, lastID := -1, uint32(0)
	for off := 0; ; off += 1000 {
		var p chainsJSON
		b.must("GET", fmt.Sprintf("/api/chains?offset=%d&limit=1000", off), nil, &p)
		if p.Total != n || p.Matched != n {
			t.Fatalf("total %d matched %d", p.Total, p.Matched)
		}
		if len(p.Chains) == 0 {
			break
		}
		for _, c := range p.Chains {
			if seen[c.ID] {
				t.Fatalf("chain %d on two pages", c.ID)
			}
			seen[c.ID] = true
			rk := rank[c.State]
			if rk < lastRank || rk == lastRank && c.ID <= lastID {
				t.Fatalf("chain %d (%s) after chain %d (rank %d)", c.ID, c.State, lastID, lastRank)
			}
			lastRank, lastID = rk, c.ID
		}
	}
	if len(seen) != n {
		t.Errorf("saw %d chains of %d", len(seen), n)
	}
	if st, _ := b.do("GET", "/api/chains?limit=1001", nil, nil); st != http.StatusBadRequest {
		t.Errorf("a page over 1000: %d", st)
	}
}

// BenchmarkChainsPage measures one page of 100 chains of a 5000-chain
// cluster through HTTP (routing cached by the console; each call still asks
// mgmtd whether it is current).
func BenchmarkChainsPage(bm *testing.B) {
	addr, rc, fs := bigCluster(bm, 5000)
	r := newRig(bm, rigConfig{mgmtd: []string{addr}, rc: rc, fs: fs})
	b := r.browser()
	b.signIn(r.admin)
	var p chainsJSON
	b.must("GET", "/api/chains?limit=100", nil, &p)
	bm.ResetTimer()
	for i := 0; i < bm.N; i++ {
		b.must("GET", fmt.Sprintf("/api/chains?limit=100&offset=%d", (i*100)%5000), nil, &p)
	}
}

// TestRecoveryProgress: progress, rate and time left from two stats samples.
func TestRecoveryProgress(t *testing.T) {
	t0 := time.Unix(1000, 0)
	prev := &nodeStats{at: t0, sync: map[routing.TargetID]syncProgress{102: {From: 101, ChunksDone: 10, Chunks: 110, BytesDone: 10 << 20}}}
	last := &nodeStats{at: t0.Add(2 * time.Second), sync: map[routing.TargetID]syncProgress{102: {From: 101, ChunksDone: 30, Chunks: 110, BytesDone: 30 << 20}}}
	rj := recoveryOf(102, last, prev)
	if rj == nil || rj.ChunksDone != 30 || rj.Chunks != 110 || rj.From != 101 {
		t.Fatalf("progress %+v", rj)
	}
	if rj.BytesPerSec == nil || *rj.BytesPerSec != 10<<20 || rj.ChunksPerSec == nil || *rj.ChunksPerSec != 10 || rj.SecondsLeft == nil || *rj.SecondsLeft != 8 {
		t.Errorf("rates %v %v left %v, want 10 MiB/s, 10 chunks/s, 8 s", rj.BytesPerSec, rj.ChunksPerSec, rj.SecondsLeft)
	}
	if rj := recoveryOf(102, last, nil); rj == nil || rj.BytesPerSec != nil || rj.SecondsLeft != nil {
		t.Errorf("one sample: %+v, want progress without rates", rj)
	}
	// A recovery that started over (another predecessor, or fewer chunks
	// done) gives no rate rather than a wrong one.
	restarted := &nodeStats{at: t0.Add(4 * time.Second), sync: map[routing.TargetID]syncProgress{102: {From: 103, ChunksDone: 1, Chunks: 50}}}
	if rj := recoveryOf(102, restarted, last); rj == nil || rj.BytesPerSec != nil {
		t.Errorf("restarted: %+v", rj)
	}
	if recoveryOf(999, last, prev) != nil {
		t.Error("progress for a target nobody recovers")
	}
}
