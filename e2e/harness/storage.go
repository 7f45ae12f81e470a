// Package harness wraps the in-process cluster (package cluster) for tests:
// a testing.TB instead of errors, cleanup at the end of the test, and the
// fault hooks (stop and restart a role, cut and slow the links between
// parties through Network). StartStorage is the one rig of its own:
// storaged with routing the test sets by hand, for tests that play mgmtd.
package harness

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/storaged"
)

// quietLog drops the services' logs; set FLYFS_TEST_LOG=1 to see them.
var quietLog = func() *slog.Logger {
	if os.Getenv("FLYFS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}()

func reserve(tb testing.TB) string {
	addr, err := cluster.ReservePort()
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}

// StorageConfig shapes a storage cluster.
type StorageConfig struct {
	Nodes    int  // storage services; default 3
	Chains   int  // default 4
	Replicas int  // targets per chain, on consecutive nodes; default min(3, Nodes)
	NoSync   bool // skip fsyncs (faster tests; crash tests keep them)
	// ForwardTimeout of each storaged (default 10 s).
	ForwardTimeout time.Duration
	// SyncWindow of each storaged (0: every update durable when
	// acknowledged; relaxed ones wait that long for a background sync).
	SyncWindow time.Duration
	// Logger receives the services' logs, their RPC servers' included
	// (default: dropped, or stderr with FLYFS_TEST_LOG set).
	Logger *slog.Logger
}

// StorageCluster is N storaged on loopback with a routing table the test sets.
type StorageCluster struct {
	tb      testing.TB
	cfg     StorageConfig
	Routing *routing.Static
	Net     *Network
	Token   string
	Nodes   []*StorageNode
	log     *slog.Logger
}

// StorageNode is one storaged: its address and data survive Kill/Restart.
type StorageNode struct {
	ID      routing.NodeID
	Name    string
	Addr    string
	Dir     string
	Targets []storaged.TargetConfig

	mu  sync.Mutex
	srv *storaged.Server
}

// StartStorage starts the cluster and stops it when the test ends.
func StartStorage(tb testing.TB, cfg StorageConfig) *StorageCluster {
	tb.Helper()
	if cfg.Nodes <= 0 {
		cfg.Nodes = 3
	}
	if cfg.Chains <= 0 {
		cfg.Chains = 4
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = min(3, cfg.Nodes)
	}
	if cfg.ForwardTimeout <= 0 {
		cfg.ForwardTimeout = 10 * time.Second
	}
	c := &StorageCluster{tb: tb, cfg: cfg, Net: NewNetwork(), Token: "harness-token", log: quietLog}
	if cfg.Logger != nil {
		c.log = cfg.Logger
	}
	info := &routing.Info{Version: 1, Nodes: map[routing.NodeID]routing.Node{}, Chains: map[routing.ChainID]*routing.Chain{}}
	base := tb.TempDir()
	for i := 0; i < cfg.Nodes; i++ {
		n := &StorageNode{ID: routing.NodeID(i + 1), Name: fmt.Sprintf("n%d", i+1), Dir: filepath.Join(base, fmt.Sprintf("n%d", i+1))}
		n.Addr = reserve(tb)
		c.Net.Own(n.Addr, n.Name)
		info.Nodes[n.ID] = routing.Node{ID: n.ID, Addr: n.Addr}
		c.Nodes = append(c.Nodes, n)
	}
	for ch := 1; ch <= cfg.Chains; ch++ {
		chain := &routing.Chain{ID: routing.ChainID(ch), Version: 1}
		for r := 0; r < cfg.Replicas; r++ {
			n := c.Nodes[(ch-1+r)%cfg.Nodes]
			tid := routing.TargetID(int(n.ID)*1000 + ch)
			n.Targets = append(n.Targets, storaged.TargetConfig{ID: tid, Chain: chain.ID})
			chain.Targets = append(chain.Targets, routing.Target{ID: tid, Node: n.ID, Public: routing.Serving, Local: routing.UpToDate})
		}
		info.Chains[chain.ID] = chain
	}
	c.Routing = routing.NewStatic(info)
	for i := range c.Nodes {
		if err := c.Start(i); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(func() {
		for i := range c.Nodes {
			c.Kill(i)
		}
	})
	return c
}

func (c *StorageCluster) rpcOptions(party string) rpc.Options {
	return rpc.Options{Token: c.Token, Logger: c.log, Dial: c.Net.Dialer(party), DialTimeout: 2 * time.Second}
}

// Start starts node i on its address and data (again, after a Kill).
func (c *StorageCluster) Start(i int) error {
	n := c.Nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv != nil {
		return fmt.Errorf("node %s is running", n.Name)
	}
	srv, err := storaged.New(storaged.Config{Node: n.ID, Disks: []string{n.Dir}, Targets: n.Targets, Routing: c.Routing,
		RPC: c.rpcOptions(n.Name), NoSync: c.cfg.NoSync, ForwardTimeout: c.cfg.ForwardTimeout, SyncWindow: c.cfg.SyncWindow, Logger: c.log})
	if err != nil {
		return err
	}
	l, err := cluster.Listen(n.Addr) // the port may linger briefly after a kill
	if err != nil {
		srv.Close()
		return err
	}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, rpc.ErrServerClosed) {
			c.log.Error("serve", "node", n.Name, "err", err)
		}
	}()
	n.srv = srv
	return nil
}

// Kill stops node i abruptly: its listener and connections close, in-flight
// requests fail, its disks close. Its data stays for Start.
func (c *StorageCluster) Kill(i int) {
	n := c.Nodes[i]
	n.mu.Lock()
	srv := n.srv
	n.srv = nil
	n.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// Server returns node i's running server, or nil.
func (c *StorageCluster) Server(i int) *storaged.Server {
	n := c.Nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.srv
}

// Client returns a chunk client that dials as party "client".
func (c *StorageCluster) Client(retryFor time.Duration) *client.ChunkIO {
	rc := rpc.NewClient(c.rpcOptions("client"))
	c.tb.Cleanup(func() { rc.Close() })
	return client.NewChunkIO(c.Routing, rc, retryFor)
}

// RPCClient returns a raw rpc client dialing as party.
func (c *StorageCluster) RPCClient(party string) *rpc.Client {
	rc := rpc.NewClient(c.rpcOptions(party))
	c.tb.Cleanup(func() { rc.Close() })
	return rc
}

// FailNode publishes node i's targets as offline, moved to the end of their
// chains, with each changed chain's version bumped: what mgmtd does when a
// node's lease expires.
func (c *StorageCluster) FailNode(i int) {
	id := c.Nodes[i].ID
	c.Routing.Update(func(in *routing.Info) {
		for _, ch := range in.Chains {
			var keep, failed []routing.Target
			for _, t := range ch.Targets {
				if t.Node == id {
					t.Public, t.Local = routing.Offline, routing.LocalOffline
					failed = append(failed, t)
				} else {
					keep = append(keep, t)
				}
			}
			if len(failed) > 0 {
				ch.Targets = append(keep, failed...)
				ch.Version++
			}
		}
	})
}
