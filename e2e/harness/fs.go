package harness

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/pebblekv"
	"github.com/flyfs/flyfs/metad"
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
	// TrashDays turns the trash on (metad/ns/trash.go).
	TrashDays int
	// MetaFaults, when set, gives metad its own Pebble store with KV fault
	// injection (failed reads and commits, "maybe committed" that did or did
	// not commit); mgmtd keeps a clean store.
	MetaFaults *kv.Faults
	// MetaKV, when set, is metad's store (the test closes it); mgmtd keeps
	// its own.
	MetaKV *kv.DB
}

// FSCluster is a running file system.
type FSCluster struct {
	*Cluster
	Metads []*MetadNode
	// MetaKV is metad's store (the cluster's KV unless MetaFaults is set).
	MetaKV *kv.DB

	once sync.Once
	fs   *client.FS
}

// MetadNode names one metadata service; its address survives Kill/Start.
type MetadNode struct{ Name, Addr string }

// StartFS starts storage, mgmtd and metad and waits until clients can use it.
// Everything stops at cleanup.
func StartFS(tb testing.TB, cfg FSConfig) *FSCluster {
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
	cfg.defaults()
	if cfg.Metads <= 0 {
		cfg.Metads = 1
	}
	if cfg.ChunkSize == 0 {
		cfg.ChunkSize = 1 << 20
	}
	if cfg.Stripe == 0 {
		cfg.Stripe = uint32(cfg.Chains)
	}
	if cfg.GCGrace == 0 {
		cfg.GCGrace = -1 // none
	}
	ccfg := cfg.config(tb.TempDir(), NewNetwork())
	ccfg.Metads, ccfg.ChunkSize, ccfg.Stripe = cfg.Metads, cfg.ChunkSize, cfg.Stripe
	ccfg.GCGrace, ccfg.GCInterval, ccfg.ReapEvery = cfg.GCGrace, 100*time.Millisecond, cfg.T
	ccfg.TrashDays = cfg.TrashDays
	if cfg.MetaFaults != nil {
		db, err := pebblekv.Open(filepath.Join(tb.TempDir(), "meta-faulty"), pebblekv.Options{NoSync: cfg.NoSync, KV: kv.Options{Faults: cfg.MetaFaults}})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { db.Close() }) // runs after the cluster stops (cleanups are LIFO)
		ccfg.MetaKV = db
	}
	if cfg.MetaKV != nil {
		ccfg.MetaKV = cfg.MetaKV
	}
	c := &FSCluster{Cluster: start(tb, ccfg)}
	c.MetaKV = c.C.MetaKV()
	for i, a := range c.C.MetadAddrs() {
		c.Metads = append(c.Metads, &MetadNode{Name: c.C.MetadName(i), Addr: a})
	}
	c.WaitHealthy(10 * time.Second)
	tb.Cleanup(func() {
		if c.fs != nil {
			c.fs.Close()
		}
	})
	return c
}

// StartMetad starts metad i (again) on its address.
func (c *FSCluster) StartMetad(i int) error { return c.C.StartMetad(i) }

// KillMetad stops metad i (its clients fail over to another).
func (c *FSCluster) KillMetad(i int) { c.C.StopMetad(i) }

// Metad returns metad i's server (nil while killed).
func (c *FSCluster) Metad(i int) *metad.Server { return c.C.Metad(i) }

// MetadAddrs returns every metad's address.
func (c *FSCluster) MetadAddrs() []string { return c.C.MetadAddrs() }

// Dial returns a new client of the file system, dialing as party (for
// Network cuts); the caller closes it.
func (c *FSCluster) Dial(party string) (*client.FS, error) { return c.DialMetad(party, nil) }

// DialMetad is Dial bound to the given metad addresses (nil: discovered).
func (c *FSCluster) DialMetad(party string, metads []string) (*client.FS, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.C.Dial(ctx, party, metads)
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
