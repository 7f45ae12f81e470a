package harness

import (
	"context"

	"testing"
	"time"

	"github.com/flyfs/flyfs/cluster"
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
	// EncryptionKey encrypts the storage nodes' chunk content at rest.
	EncryptionKey []byte
	// SyncWindow is the storage nodes' (storaged.Config.SyncWindow).
	SyncWindow time.Duration
}

func (cfg *ClusterConfig) defaults() {
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
}

// config is the in-process cluster's configuration for cfg.
func (cfg ClusterConfig) config(dir string, net *Network) cluster.Config {
	return cluster.Config{Dir: dir, KV: cfg.KV, NoSync: cfg.NoSync, Token: "cluster-token", EncryptionKey: cfg.EncryptionKey, SyncWindow: cfg.SyncWindow,
		Mgmtds: cfg.Mgmtds, HeartbeatTimeout: cfg.T, ScanInterval: cfg.T / 6,
		Nodes: cfg.Nodes, Chains: cfg.Chains, Replicas: cfg.Replicas,
		ForwardTimeout: 2 * cfg.T, ResyncBytesPerSec: cfg.ResyncBytesPerSec,
		Network: net, Logger: quietLog}
}

// Cluster is a managed in-process cluster (package cluster) that a test can
// stop, restart and cut off; it stops when the test ends.
type Cluster struct {
	tb     testing.TB
	C      *cluster.Cluster
	KV     *kv.DB
	Net    *Network
	Token  string
	Mgmtds []*MgmtdNode
	Nodes  []*ManagedNode
}

// MgmtdNode names one cluster manager.
type MgmtdNode struct{ ID, Name, Addr string }

// ManagedNode names one storage node; address and data survive Kill/Start.
type ManagedNode struct {
	ID   routing.NodeID
	Name string
	Addr string
	Dir  string
}

// StartCluster starts mgmtds, creates the chains, starts the storage nodes,
// and waits until every chain serves with all its replicas.
func StartCluster(tb testing.TB, cfg ClusterConfig) *Cluster {
	tb.Helper()
	cfg.defaults()
	if cfg.KV == nil {
		cfg.KV = memkv.Open(kv.Options{})
	}
	c := start(tb, cfg.config(tb.TempDir(), NewNetwork()))
	c.WaitHealthy(10 * time.Second)
	return c
}

// start starts an in-process cluster for the test and names its roles.
func start(tb testing.TB, cfg cluster.Config) *Cluster {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := cluster.Start(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cl.Close() })
	c := &Cluster{tb: tb, C: cl, KV: cl.KV(), Net: cfg.Network.(*Network), Token: cfg.Token}
	for i, a := range cl.MgmtdAddrs() {
		c.Mgmtds = append(c.Mgmtds, &MgmtdNode{ID: cl.MgmtdName(i), Name: cl.MgmtdName(i), Addr: a})
	}
	for i := 0; i < cl.Nodes(); i++ {
		n := cl.Node(i)
		c.Nodes = append(c.Nodes, &ManagedNode{ID: n.ID, Name: n.Name, Addr: n.Addr, Dir: n.Dir})
	}
	return c
}

// RPCClient returns an rpc client dialing as party; closed at cleanup.
func (c *Cluster) RPCClient(party string) *rpc.Client {
	rc := rpc.NewClient(c.C.RPCOptions(party))
	c.tb.Cleanup(func() { rc.Close() })
	return rc
}

// MgmtdAddrs lists the cluster managers' addresses.
func (c *Cluster) MgmtdAddrs() []string { return c.C.MgmtdAddrs() }

// StartMgmtd starts cluster manager i.
func (c *Cluster) StartMgmtd(i int) error { return c.C.StartMgmtd(i) }

// KillMgmtd stops cluster manager i.
func (c *Cluster) KillMgmtd(i int) { c.C.StopMgmtd(i) }

// Mgmtd returns cluster manager i's server, or nil.
func (c *Cluster) Mgmtd(i int) *mgmtd.Server { return c.C.Mgmtd(i) }

// Start starts storage node i on its data.
func (c *Cluster) Start(i int) error { return c.C.StartNode(i) }

// Kill stops storage node i abruptly; its data stays.
func (c *Cluster) Kill(i int) { c.C.StopNode(i) }

// Server returns storage node i's server, or nil.
func (c *Cluster) Server(i int) *storaged.Server { return c.C.Storage(i) }

// Wipe deletes a stopped storage node's data: a replaced disk.
func (c *Cluster) Wipe(i int) error { return c.C.WipeNode(i) }

// Client returns a chunk client over routing from mgmtd.
func (c *Cluster) Client(retryFor time.Duration) *client.ChunkIO {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, closeCl, err := c.C.ChunkClient(ctx, "client", retryFor)
	if err != nil {
		c.tb.Fatal(err)
	}
	c.tb.Cleanup(closeCl)
	return cl
}

// Routing fetches the newest routing from any mgmtd (empty on error).
func (c *Cluster) Routing() *routing.Info {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := c.C.Routing(ctx)
	if err != nil {
		return &routing.Info{}
	}
	return info
}

// WaitFor polls routing until cond holds; the test fails after d.
func (c *Cluster) WaitFor(d time.Duration, what string, cond func(*routing.Info) bool) *routing.Info {
	c.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var last *routing.Info
	err := c.C.WaitRouting(ctx, what, func(in *routing.Info) bool { last = in; return cond(in) })
	if err != nil {
		c.tb.Fatalf("after %v: %v", d, err)
	}
	return last
}

// WaitHealthy waits until every chain has all its targets serving.
func (c *Cluster) WaitHealthy(d time.Duration) *routing.Info {
	c.tb.Helper()
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
func Describe(in *routing.Info) string { return cluster.Describe(in) }
