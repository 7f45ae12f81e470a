package mgmtd

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// cluster is several mgmtd on one memkv store, plus fake storage nodes that
// heartbeat to whichever mgmtd is primary.
type cluster struct {
	t       *testing.T
	db      *kv.DB
	open    func() *kv.DB
	cfg     Config // template: timing
	rc      *rpc.Client
	api     mgmtdapi.Client
	mu      sync.Mutex
	servers []*Server
	addrs   []string
	down    map[*Server]bool
}

// timing is one test's T, lease length and bootstrapping window.
type timing struct{ T, L, Boot time.Duration }

func newCluster(t *testing.T, n int, tm timing) *cluster {
	t.Helper()
	db := memkv.Open(kv.Options{})
	t.Cleanup(func() { db.Close() })
	return newClusterOn(t, n, tm, db, func() *kv.DB { return db })
}

// newClusterOn starts n mgmtd, each on the store open returns (a shared
// handle, or one per mgmtd as separate processes would have); db is a handle
// the test reads through.
func newClusterOn(t *testing.T, n int, tm timing, db *kv.DB, open func() *kv.DB) *cluster {
	t.Helper()
	rc := rpc.NewClient(rpc.Options{Token: "tok", DialTimeout: time.Second})
	t.Cleanup(func() { rc.Close() })
	c := &cluster{t: t, db: db, open: open, rc: rc, api: mgmtdapi.Client{RPC: rc}, down: map[*Server]bool{},
		cfg: Config{KV: db, HeartbeatTimeout: tm.T, LeaseLength: tm.L, Bootstrapping: tm.Boot, ScanInterval: 25 * time.Millisecond}}
	for i := range n {
		c.start(fmt.Sprintf("m%d", i+1))
	}
	return c
}

// start adds a mgmtd.
func (c *cluster) start(id string) *Server {
	c.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	cfg := c.cfg
	cfg.ID, cfg.Addr, cfg.KV = id, l.Addr().String(), c.open()
	cfg.RPC = rpc.Options{Token: "tok"}
	cfg.Logger = slog.New(slog.NewTextHandler(c.t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, err := New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	go s.Serve(l)
	c.t.Cleanup(func() { s.Close() })
	c.mu.Lock()
	c.servers = append(c.servers, s)
	c.addrs = append(c.addrs, cfg.Addr)
	c.mu.Unlock()
	return s
}

// crash stops s without giving up its lease, as a killed process would.
func (c *cluster) crash(s *Server) {
	c.mu.Lock()
	c.down[s] = true
	c.mu.Unlock()
	s.stop()
}

// close stops s cleanly (it releases its lease).
func (c *cluster) close(s *Server) {
	c.mu.Lock()
	c.down[s] = true
	c.mu.Unlock()
	if err := s.Close(); err != nil {
		c.t.Errorf("close %s: %v", s.cfg.ID, err)
	}
}

func (c *cluster) addr(s *Server) string { return s.cfg.Addr }

// mgmtd returns the client library's caller of every mgmtd of the cluster:
// it finds the primary whatever happens to the lease meanwhile.
func (c *cluster) mgmtd() *client.Mgmtd {
	c.mu.Lock()
	defer c.mu.Unlock()
	return client.NewMgmtd(c.rc, c.addrs)
}

// primaries returns the running mgmtd that act as primary now.
func (c *cluster) primaries() []*Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Server
	for _, s := range c.servers {
		if !c.down[s] && s.IsPrimary() {
			out = append(out, s)
		}
	}
	return out
}

// primary waits for a primary and returns it.
func (c *cluster) primary() *Server {
	c.t.Helper()
	var p *Server
	waitFor(c.t, 5*time.Second, "a primary", func() bool {
		ps := c.primaries()
		if len(ps) == 1 {
			p = ps[0]
		}
		return p != nil
	})
	return p
}

// routing reads the routing straight from the KV store.
func (c *cluster) routing() *routing.Info {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var info *routing.Info
	err := c.db.RunRead(ctx, func(tx kv.ReadTxn) error {
		var err error
		info, err = readRouting(ctx, tx)
		return err
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return info
}

func (c *cluster) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	c.t.Cleanup(cancel)
	return ctx
}

// setChains creates chains through the primary: chain id, then the nodes of
// its targets (target id = chain*100 + position).
func (c *cluster) setChains(chains map[routing.ChainID][]routing.NodeID) uint64 {
	c.t.Helper()
	var req mgmtdapi.SetChainsReq
	for id, nodes := range chains {
		ch := routing.Chain{ID: id}
		for i, n := range nodes {
			ch.Targets = append(ch.Targets, routing.Target{ID: routing.TargetID(uint32(id)*100 + uint32(i) + 1), Node: n})
		}
		req.Chains = append(req.Chains, ch)
	}
	c.primary()
	resp, err := c.mgmtd().SetChains(c.ctx(), &req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.RoutingVersion
}

// fakeNode heartbeats for a storage node to the current primary.
type fakeNode struct {
	id          routing.NodeID
	c           *cluster
	mu          sync.Mutex
	states      map[routing.TargetID]routing.LocalState
	seq         uint64
	incarnation uint64
	stop        chan struct{}
	done        chan struct{}
	beats       int // heartbeats accepted
}

// runNode starts heartbeating every T/5 for node id, reporting states.
func (c *cluster) runNode(id routing.NodeID, states map[routing.TargetID]routing.LocalState) *fakeNode {
	n := &fakeNode{id: id, c: c, states: states, incarnation: uint64(id)*1000 + 7, stop: make(chan struct{}), done: make(chan struct{})}
	go n.loop(c.cfg.HeartbeatTimeout / 5)
	c.t.Cleanup(n.halt)
	return n
}

func (n *fakeNode) loop(every time.Duration) {
	defer close(n.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		n.beat()
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
	}
}

func (n *fakeNode) beat() {
	ps := n.c.primaries()
	if len(ps) != 1 {
		return
	}
	n.mu.Lock()
	n.seq++
	req := &mgmtdapi.HeartbeatReq{Node: n.id, Addr: fmt.Sprintf("node%d:9100", n.id), Seq: n.seq, Incarnation: n.incarnation}
	for tid, st := range n.states {
		req.Targets = append(req.Targets, mgmtdapi.TargetReport{Target: tid, Local: st})
	}
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := n.c.api.Heartbeat(ctx, ps[0].cfg.Addr, req); err == nil {
		n.mu.Lock()
		n.beats++
		n.mu.Unlock()
	}
}

// accepted returns how many heartbeats were accepted so far.
func (n *fakeNode) accepted() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.beats
}

// set changes what the node reports for a target.
func (n *fakeNode) set(id routing.TargetID, st routing.LocalState) {
	n.mu.Lock()
	n.states[id] = st
	n.mu.Unlock()
}

// halt stops heartbeating (idempotent).
func (n *fakeNode) halt() {
	select {
	case <-n.stop:
	default:
		close(n.stop)
	}
	<-n.done
}

// waitBeats waits until the node had k heartbeats accepted.
func (n *fakeNode) waitBeats(k int) {
	waitFor(n.c.t, 5*time.Second, fmt.Sprintf("%d heartbeats of node %d", k, n.id), func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.beats >= k
	})
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// layout renders a chain as "101:serving 102:offline" for comparisons.
func layout(c *routing.Chain) string {
	if c == nil {
		return "<no chain>"
	}
	s := ""
	for i, t := range c.Targets {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%d:%s", t.ID, t.Public)
	}
	return s
}

func upToDate(ids ...routing.TargetID) map[routing.TargetID]routing.LocalState {
	m := map[routing.TargetID]routing.LocalState{}
	for _, id := range ids {
		m[id] = routing.UpToDate
	}
	return m
}

func codeOf(err error) rpc.Code { return rpc.CodeOf(err) }
