package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/mgmtd"
	"github.com/flyfs/flyfs/storaged"
)

// ClusterConfig shapes a managed cluster: mgmtd on a shared KV store, storage
// nodes that heartbeat to it and learn their targets from its routing.
type ClusterConfig struct {
	Mgmtds   int           // default 1
	Nodes    int           // storage nodes; default 3
	Chains   int           // default 2
	Replicas int           // default min(3, Nodes)
	T        time.Duration // heartbeat timeout; default 600 ms
	NoSync   bool
	// ResyncBytesPerSec throttles recovery (0: storaged's default).
	ResyncBytesPerSec int64
	// KV is mgmtd's store (default: a fresh in-memory one).
	KV *kv.DB
}

// Cluster is a managed in-process cluster.
type Cluster struct {
	tb     TB
	cfg    ClusterConfig
	KV     *kv.DB
	Net    *Network
	Token  string
	Mgmtds []*MgmtdNode
	Nodes  []*ManagedNode
	addrs  []string
}

// MgmtdNode is one cluster manager.
type MgmtdNode struct {
	ID, Name, Addr string
	mu             sync.Mutex
	srv            *mgmtd.Server
}

// ManagedNode is one storage node; address and data survive Kill/Start.
type ManagedNode struct {
	ID   routing.NodeID
	Name string
	Addr string
	Dir  string

	mu  sync.Mutex
	srv *storaged.Server
	src *client.MgmtdSource
	rc  *rpc.Client
}

func reserve(tb TB) string {
	addr, err := ReservePort()
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}

func listenAgain(addr string) (net.Listener, error) {
	var err error
	for try := 0; try < 150; try++ {
		var l net.Listener
		if l, err = net.Listen("tcp", addr); err == nil {
			return l, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("listen %s: %w", addr, err)
}

// StartCluster starts mgmtds, creates the chains, starts the storage nodes,
// and waits until every chain serves with all its replicas.
func StartCluster(tb TB, cfg ClusterConfig) *Cluster {
	tb.Helper()
	if cfg.Mgmtds <= 0 {
		cfg.Mgmtds = 1
	}
	if cfg.Nodes <= 0 {
		cfg.Nodes = 3
	}
	if cfg.Chains <= 0 {
		cfg.Chains = 2
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = min(3, cfg.Nodes)
	}
	if cfg.T <= 0 {
		cfg.T = 600 * time.Millisecond
	}
	db := cfg.KV
	if db == nil {
		db = memkv.Open(kv.Options{})
	}
	c := &Cluster{tb: tb, cfg: cfg, KV: db, Net: NewNetwork(), Token: "cluster-token"}
	base := tb.TempDir()
	for i := 0; i < cfg.Mgmtds; i++ {
		m := &MgmtdNode{ID: fmt.Sprintf("m%d", i+1), Name: fmt.Sprintf("m%d", i+1), Addr: reserve(tb)}
		c.Net.Own(m.Addr, m.Name)
		c.Mgmtds = append(c.Mgmtds, m)
		c.addrs = append(c.addrs, m.Addr)
	}
	for i := 0; i < cfg.Nodes; i++ {
		n := &ManagedNode{ID: routing.NodeID(i + 1), Name: fmt.Sprintf("n%d", i+1), Addr: reserve(tb), Dir: filepath.Join(base, fmt.Sprintf("n%d", i+1))}
		c.Net.Own(n.Addr, n.Name)
		c.Nodes = append(c.Nodes, n)
	}
	tb.Cleanup(c.stopAll)
	for i := range c.Mgmtds {
		if err := c.StartMgmtd(i); err != nil {
			tb.Fatal(err)
		}
	}
	// Chains on consecutive nodes, as a simple layout.
	req := &mgmtdapi.SetChainsReq{}
	for ch := 1; ch <= cfg.Chains; ch++ {
		chain := routing.Chain{ID: routing.ChainID(ch), Version: 1}
		for r := 0; r < cfg.Replicas; r++ {
			n := c.Nodes[(ch-1+r)%cfg.Nodes]
			chain.Targets = append(chain.Targets, routing.Target{ID: routing.TargetID(ch*100 + r + 1), Node: n.ID, Public: routing.Serving, Local: routing.UpToDate})
		}
		req.Chains = append(req.Chains, chain)
	}
	admin := client.NewMgmtd(c.RPCClient("admin"), c.addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if _, err := admin.SetChains(ctx, req); err == nil {
			break
		} else if ctx.Err() != nil {
			tb.Fatalf("set chains: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range c.Nodes {
		if err := c.Start(i); err != nil {
			tb.Fatal(err)
		}
	}
	c.WaitHealthy(10 * time.Second)
	return c
}

func (c *Cluster) rpcOptions(party string) rpc.Options {
	return rpc.Options{Token: c.Token, Logger: quietLog, Dial: c.Net.Dialer(party), DialTimeout: time.Second}
}

// RPCClient returns an rpc client dialing as party; closed at cleanup.
func (c *Cluster) RPCClient(party string) *rpc.Client {
	rc := rpc.NewClient(c.rpcOptions(party))
	c.tb.Cleanup(func() { rc.Close() })
	return rc
}

// MgmtdAddrs lists the cluster managers' addresses.
func (c *Cluster) MgmtdAddrs() []string { return append([]string(nil), c.addrs...) }

// StartMgmtd starts cluster manager i.
func (c *Cluster) StartMgmtd(i int) error {
	m := c.Mgmtds[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.srv != nil {
		return nil
	}
	srv, err := mgmtd.New(mgmtd.Config{ID: m.ID, Addr: m.Addr, KV: c.KV, HeartbeatTimeout: c.cfg.T,
		ScanInterval: c.cfg.T / 6, RPC: c.rpcOptions(m.Name), Logger: quietLog})
	if err != nil {
		return err
	}
	l, err := listenAgain(m.Addr)
	if err != nil {
		srv.Close()
		return err
	}
	go srv.Serve(l)
	m.srv = srv
	return nil
}

// KillMgmtd stops cluster manager i abruptly.
func (c *Cluster) KillMgmtd(i int) {
	m := c.Mgmtds[i]
	m.mu.Lock()
	srv := m.srv
	m.srv = nil
	m.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// Mgmtd returns cluster manager i's server, or nil.
func (c *Cluster) Mgmtd(i int) *mgmtd.Server {
	m := c.Mgmtds[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.srv
}

// Start starts storage node i on its data.
func (c *Cluster) Start(i int) error {
	n := c.Nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv != nil {
		return nil
	}
	rc := rpc.NewClient(c.rpcOptions(n.Name))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	src, err := client.NewMgmtdSource(ctx, c.addrs, rc, c.cfg.T/6)
	if err != nil {
		rc.Close()
		return err
	}
	srv, err := storaged.New(storaged.Config{Node: n.ID, Addr: n.Addr, Disks: []string{n.Dir}, Routing: src,
		Mgmtd: src.Mgmtd(), HeartbeatTimeout: c.cfg.T, RPC: c.rpcOptions(n.Name), NoSync: c.cfg.NoSync,
		ForwardTimeout: 2 * c.cfg.T, ResyncBytesPerSec: c.cfg.ResyncBytesPerSec, Logger: quietLog})
	if err != nil {
		src.Close()
		rc.Close()
		return err
	}
	l, err := listenAgain(n.Addr)
	if err != nil {
		srv.Close()
		src.Close()
		rc.Close()
		return err
	}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, rpc.ErrServerClosed) {
			quietLog.Error("serve", "err", err)
		}
	}()
	n.srv, n.src, n.rc = srv, src, rc
	return nil
}

// Kill stops storage node i abruptly; its data stays.
func (c *Cluster) Kill(i int) {
	n := c.Nodes[i]
	n.mu.Lock()
	srv, src, rc := n.srv, n.src, n.rc
	n.srv, n.src, n.rc = nil, nil, nil
	n.mu.Unlock()
	if srv != nil {
		srv.Close()
		src.Close()
		rc.Close()
	}
}

// Server returns storage node i's server, or nil.
func (c *Cluster) Server(i int) *storaged.Server {
	n := c.Nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.srv
}

func (c *Cluster) stopAll() {
	for i := range c.Nodes {
		c.Kill(i)
	}
	for i := range c.Mgmtds {
		c.KillMgmtd(i)
	}
}

// Client returns a chunk client over routing from mgmtd.
func (c *Cluster) Client(retryFor time.Duration) *client.ChunkIO {
	rc := c.RPCClient("client")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	src, err := client.NewMgmtdSource(ctx, c.addrs, rc, c.cfg.T/6)
	if err != nil {
		c.tb.Fatal(err)
	}
	c.tb.Cleanup(src.Close)
	return client.NewChunkIO(src, rc, retryFor)
}

// Routing fetches the newest routing from any mgmtd.
func (c *Cluster) Routing() *routing.Info {
	m := client.NewMgmtd(c.RPCClient("admin"), c.addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := m.GetRouting(ctx, 0)
	if err != nil || resp.Info == nil {
		return &routing.Info{}
	}
	return resp.Info
}

// WaitFor polls routing until cond holds or d passes.
func (c *Cluster) WaitFor(d time.Duration, what string, cond func(*routing.Info) bool) *routing.Info {
	c.tb.Helper()
	deadline := time.Now().Add(d)
	var info *routing.Info
	for time.Now().Before(deadline) {
		info = c.Routing()
		if cond(info) {
			return info
		}
		time.Sleep(c.cfg.T / 10)
	}
	c.tb.Fatalf("after %v: %s never happened; routing: %s", d, what, Describe(info))
	return nil
}

// WaitHealthy waits until every chain has all its targets serving.
func (c *Cluster) WaitHealthy(d time.Duration) *routing.Info {
	return c.WaitFor(d, "every target serving", func(in *routing.Info) bool {
		if len(in.Chains) == 0 {
			return false
		}
		for _, ch := range in.Chains {
			for _, t := range ch.Targets {
				if t.Public != routing.Serving {
					return false
				}
			}
		}
		return true
	})
}

// Describe prints chains and their target states, for failure messages.
func Describe(in *routing.Info) string {
	if in == nil {
		return "<none>"
	}
	s := fmt.Sprintf("v%d", in.Version)
	for id := routing.ChainID(1); int(id) <= len(in.Chains)+10; id++ {
		ch, ok := in.Chains[id]
		if !ok {
			continue
		}
		s += fmt.Sprintf(" | chain %d v%d:", id, ch.Version)
		for _, t := range ch.Targets {
			s += fmt.Sprintf(" %d@n%d:%v/%v", t.ID, t.Node, t.Public, t.Local)
		}
	}
	return s
}

// Wipe deletes a stopped storage node's data: a replaced disk.
func (c *Cluster) Wipe(i int) error {
	n := c.Nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv != nil {
		return fmt.Errorf("node %s is running", n.Name)
	}
	return os.RemoveAll(n.Dir)
}
