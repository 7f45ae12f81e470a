package client

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// fakeMgmtds are cluster managers reduced to what the client sees: shared
// routing any of them serves, and one primary the others redirect to.
type fakeMgmtds struct {
	t       *testing.T
	mu      sync.Mutex
	info    *routing.Info
	primary int // index of the primary, -1 for none
	addrs   []string
	servers []*rpc.Server
	beats   map[int]int // heartbeats taken, by mgmtd
}

func newFakeMgmtds(t *testing.T, n int) *fakeMgmtds {
	f := &fakeMgmtds{t: t, info: &routing.Info{Version: 1, Nodes: map[routing.NodeID]routing.Node{}, Chains: map[routing.ChainID]*routing.Chain{}},
		beats: map[int]int{}}
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := rpc.NewServer(rpc.Options{})
		rpc.Handle(srv, mgmtdapi.MethodGetRouting, func(ctx context.Context, req *mgmtdapi.GetRoutingReq, _ []byte) (*mgmtdapi.GetRoutingResp, []byte, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if req.Have != 0 && req.Have >= f.info.Version {
				return &mgmtdapi.GetRoutingResp{}, nil, nil
			}
			return &mgmtdapi.GetRoutingResp{Info: f.info.Clone()}, nil, nil
		})
		rpc.Handle(srv, mgmtdapi.MethodHeartbeat, func(ctx context.Context, req *mgmtdapi.HeartbeatReq, _ []byte) (*mgmtdapi.HeartbeatResp, []byte, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.primary != i {
				addr := ""
				if f.primary >= 0 {
					addr = f.addrs[f.primary]
				}
				return nil, nil, mgmtdapi.NotPrimary(addr)
			}
			f.beats[i]++
			return &mgmtdapi.HeartbeatResp{RoutingVersion: f.info.Version}, nil, nil
		})
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		f.addrs = append(f.addrs, l.Addr().String())
		f.servers = append(f.servers, srv)
	}
	return f
}

// bump publishes a new routing version with one more chain.
func (f *fakeMgmtds) bump() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	next := f.info.Clone()
	next.Version++
	id := routing.ChainID(next.Version)
	next.Chains[id] = &routing.Chain{ID: id, Version: 1, Targets: []routing.Target{{ID: routing.TargetID(id) * 100, Node: 1, Public: routing.Serving}}}
	f.info = next
	return next.Version
}

func (f *fakeMgmtds) beatsOf(i int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.beats[i]
}

func (m *Mgmtd) knownPrimary() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.primary
}

func (f *fakeMgmtds) setPrimary(i int) {
	f.mu.Lock()
	f.primary = i
	f.mu.Unlock()
}

func testClient(t *testing.T) *rpc.Client {
	rc := rpc.NewClient(rpc.Options{DialTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { rc.Close() })
	return rc
}

func waitVersion(t *testing.T, src *MgmtdSource, v uint64) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		ch := src.Changed()
		if src.Current().Version >= v {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("routing stuck at version %d, want %d", src.Current().Version, v)
		}
	}
}

// TestMgmtdSourceFollowsChanges: the source loads routing at once, signals
// every newer version through Changed, fetches at once on Refresh, and keeps
// following when the mgmtd it used dies.
func TestMgmtdSourceFollowsChanges(t *testing.T) {
	f := newFakeMgmtds(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	src, err := NewMgmtdSource(ctx, f.addrs, testClient(t), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if v := src.Current().Version; v != 1 {
		t.Fatalf("initial version %d", v)
	}
	changed := src.Changed()
	v := f.bump()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("Changed not closed after a new version")
	}
	if got := src.Current(); got.Version != v || got.Chains[routing.ChainID(v)] == nil {
		t.Fatalf("after the change: version %d, chains %v", got.Version, got.Chains)
	}

	// Refresh fetches without waiting for the poll.
	slow, err := NewMgmtdSource(ctx, f.addrs, testClient(t), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	v = f.bump()
	got, err := slow.Refresh(ctx, v-1)
	if err != nil || got.Version != v {
		t.Fatalf("Refresh: version %v, %v; want %d", got.Version, err, v)
	}

	// The mgmtd used so far dies; the other serves.
	f.servers[0].Close()
	v = f.bump()
	waitVersion(t, src, v)
}

// TestMgmtdSourceWaitsForFirstRouting: with no mgmtd reachable the
// constructor gives up when ctx ends and says why.
func TestMgmtdSourceWaitsForFirstRouting(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens here now
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := NewMgmtdSource(ctx, []string{addr}, testClient(t), 0); err == nil {
		t.Fatal("a source with no reachable mgmtd loaded routing")
	}
}

// TestCallPrimaryRedirects: calls to the primary follow NotPrimary redirects,
// remember the primary, wait out an election, and move with the primary.
func TestCallPrimaryRedirects(t *testing.T) {
	f := newFakeMgmtds(t, 3)
	f.setPrimary(2)
	m := NewMgmtd(testClient(t), f.addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hb := &mgmtdapi.HeartbeatReq{Node: 1}
	if _, err := m.Heartbeat(ctx, hb); err != nil {
		t.Fatal(err)
	}
	if p, beats := m.knownPrimary(), f.beatsOf(2); p != f.addrs[2] || beats != 1 {
		t.Fatalf("primary remembered as %q, %d heartbeats on the primary", p, beats)
	}

	// No primary for a while (an election), then mgmtd 1.
	f.setPrimary(-1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		f.setPrimary(1)
	}()
	if _, err := m.Heartbeat(ctx, hb); err != nil {
		t.Fatal(err)
	}
	if p, beats := m.knownPrimary(), f.beatsOf(1); p != f.addrs[1] || beats != 1 {
		t.Fatalf("after the election: primary %q, %d heartbeats on it", p, beats)
	}

	// The one-off form, and a deadline when nobody is primary.
	f.setPrimary(0)
	if _, err := CallPrimary[mgmtdapi.HeartbeatReq, mgmtdapi.HeartbeatResp](ctx, testClient(t), f.addrs, mgmtdapi.MethodHeartbeat, hb); err != nil {
		t.Fatal(err)
	}
	f.setPrimary(-1)
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	if _, err := m.Heartbeat(short, hb); !errors.Is(err, ErrNoMgmtd) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("with no primary: %v", err)
	}
}
