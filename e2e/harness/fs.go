package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/pebblekv"
	"github.com/flyfs/flyfs/metad"
	"github.com/flyfs/flyfs/metad/ns"
)

// FSConfig shapes a whole in-process file system: a managed storage cluster
// (ClusterConfig) plus metad over one real Pebble store shared with mgmtd,
// as `flyfs server` runs them.
type FSConfig struct {
	ClusterConfig
	Metads    int    // default 1
	ChunkSize uint32 // new files' chunk size; default 1 MiB
	Stripe    uint32 // chains per file; default all chains
	// GCGrace is how long removed files keep their chunks (default: none,
	// so tests see reclamation at once).
	GCGrace time.Duration
	// MetaFaults, when set, gives metad its own Pebble store with KV fault
	// injection (failed reads and commits, "maybe committed" that did or did
	// not commit); mgmtd keeps a clean store.
	MetaFaults *kv.Faults
}

// FSCluster is a running file system.
type FSCluster struct {
	*Cluster
	cfg    FSConfig
	Metads []*MetadNode
	once   sync.Once
	fs     *client.FS
	// MetaKV is metad's store (the cluster's KV unless MetaFaults is set).
	MetaKV *kv.DB
}

// MetadNode is one metadata service; its address survives Kill/Start.
type MetadNode struct {
	Name, Addr string
	mu         sync.Mutex
	srv        *metad.Server
	src        *client.MgmtdSource
}

// StartFS starts storage, mgmtd and metad and waits until clients can use it.
// Everything stops at cleanup.
func StartFS(tb TB, cfg FSConfig) *FSCluster {
	tb.Helper()
	if cfg.Nodes <= 0 {
		cfg.Nodes = 1
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Chains <= 0 {
		cfg.Chains = 4
	}
	if cfg.T <= 0 {
		cfg.T = time.Second
	}
	if cfg.Metads <= 0 {
		cfg.Metads = 1
	}
	if cfg.ChunkSize == 0 {
		cfg.ChunkSize = 1 << 20
	}
	if cfg.Stripe == 0 {
		cfg.Stripe = uint32(cfg.Chains)
	}
	if cfg.KV == nil {
		db, err := pebblekv.Open(filepath.Join(tb.TempDir(), "meta"), pebblekv.Options{NoSync: cfg.NoSync})
		if err != nil {
			tb.Fatal(err)
		}
		cfg.KV = db
		tb.Cleanup(func() { db.Close() }) // runs after the services stop (cleanups are LIFO)
	}
	c := &FSCluster{Cluster: StartCluster(tb, cfg.ClusterConfig), cfg: cfg}
	c.MetaKV = c.KV
	if cfg.MetaFaults != nil {
		db, err := pebblekv.Open(filepath.Join(tb.TempDir(), "meta-faulty"), pebblekv.Options{NoSync: cfg.NoSync, KV: kv.Options{Faults: cfg.MetaFaults}})
		if err != nil {
			tb.Fatal(err)
		}
		c.MetaKV = db
		tb.Cleanup(func() { db.Close() })
	}
	for i := 0; i < cfg.Metads; i++ {
		m := &MetadNode{Name: fmt.Sprintf("md%d", i+1), Addr: reserve(tb)}
		c.Net.Own(m.Addr, m.Name)
		c.Metads = append(c.Metads, m)
	}
	tb.Cleanup(func() {
		if c.fs != nil {
			c.fs.Close()
		}
		for i := range c.Metads {
			c.KillMetad(i)
		}
	})
	for i := range c.Metads {
		if err := c.StartMetad(i); err != nil {
			tb.Fatal(err)
		}
	}
	c.waitMetadRegistered(len(c.Metads))
	return c
}

// waitMetadRegistered waits until mgmtd lists n live metad, so that clients
// dialed next discover all of them.
func (c *FSCluster) waitMetadRegistered(n int) {
	m := client.NewMgmtd(c.RPCClient("harness"), c.MgmtdAddrs())
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := m.Services(ctx, mgmtdapi.KindMetad)
		cancel()
		alive := 0
		if err == nil {
			for _, s := range resp.Services {
				if s.Alive {
					alive++
				}
			}
		}
		if alive >= n {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("only %d of %d metad registered with mgmtd (%v)", alive, n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StartMetad starts metad i (again) on its address.
func (c *FSCluster) StartMetad(i int) error {
	m := c.Metads[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.srv != nil {
		return fmt.Errorf("metad %d already runs", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc := c.RPCClient(m.Name)
	src, err := client.NewMgmtdSource(ctx, c.MgmtdAddrs(), rc, 100*time.Millisecond)
	if err != nil {
		return err
	}
	l, err := listenAgain(m.Addr)
	if err != nil {
		src.Close()
		return err
	}
	grace := c.cfg.GCGrace
	if grace == 0 {
		grace = -1 // none
	}
	srv, err := metad.New(metad.Config{KV: c.MetaKV, Namespace: ns.Options{GCGrace: grace}, Routing: src, Storage: rc, RPC: c.rpcOptions(m.Name), Logger: quietLog,
		DefaultChunkSize: c.cfg.ChunkSize, DefaultStripe: c.cfg.Stripe, GCInterval: 100 * time.Millisecond,
		Mgmtd: src.Mgmtd(), Addr: m.Addr, ID: m.Name, ReapEvery: c.cfg.T})
	if err != nil {
		l.Close()
		src.Close()
		return err
	}
	go srv.Serve(l)
	m.srv, m.src = srv, src
	return nil
}

// KillMetad stops metad i (its clients fail over to another).
func (c *FSCluster) KillMetad(i int) {
	m := c.Metads[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.srv != nil {
		m.srv.Close()
		m.src.Close()
		m.srv, m.src = nil, nil
	}
}

// Metad returns metad i's server (nil while killed).
func (c *FSCluster) Metad(i int) *metad.Server {
	m := c.Metads[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.srv
}

// MetadAddrs returns every metad's address.
func (c *FSCluster) MetadAddrs() []string {
	var out []string
	for _, m := range c.Metads {
		out = append(out, m.Addr)
	}
	return out
}

// Dial returns a new client of the file system, dialing as party (for
// Network cuts); the caller closes it.
func (c *FSCluster) Dial(party string) (*client.FS, error) {
	return c.DialMetad(party, nil)
}

// DialMetad is Dial bound to the given metad addresses (nil: discovered).
func (c *FSCluster) DialMetad(party string, metads []string) (*client.FS, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return client.Dial(ctx, client.Config{Mgmtd: c.MgmtdAddrs(), Token: c.Token, Logger: quietLog, Dialer: c.Net.Dialer(party), Metad: metads})
}

// FS returns the cluster's shared client (dialed on first use, closed at
// cleanup).
func (c *FSCluster) FS() *client.FS {
	c.once.Do(func() {
		fs, err := c.Dial("client")
		if err != nil {
			c.tb.Fatal(err)
		}
		c.fs = fs
	})
	return c.fs
}
