package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/metad"
	"github.com/flyfs/flyfs/metad/ns"
)

// metadRole is one metadata service; its address survives a stop and start.
type metadRole struct {
	Name, Addr string
	mu         sync.Mutex
	srv        *metad.Server
	src        *client.MgmtdSource
	rc         *rpc.Client
}

// Metads is the number of metadata services.
func (c *Cluster) Metads() int { return len(c.metads) }

// MetadAddrs lists the metadata services' addresses.
func (c *Cluster) MetadAddrs() []string {
	out := make([]string, len(c.metads))
	for i, m := range c.metads {
		out[i] = m.Addr
	}
	return out
}

// MetadName is metadata service i's id, which is also its party name.
func (c *Cluster) MetadName(i int) string { return c.metads[i].Name }

// StartMetad starts metadata service i (again) on its address.
func (c *Cluster) StartMetad(i int) error {
	m := c.metads[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.srv != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc := rpc.NewClient(c.roleRPC(m.Name, "metad"))
	src, err := client.NewMgmtdSource(ctx, c.MgmtdAddrs(), rc, c.cfg.HeartbeatTimeout/6)
	if err != nil {
		rc.Close()
		return fmt.Errorf("metad %s: %w", m.Name, err)
	}
	srv, err := metad.New(metad.Config{KV: c.metaKV, Namespace: ns.Options{GCGrace: c.cfg.GCGrace, TrashDays: c.cfg.TrashDays, InlineMax: c.inlineFileMax()}, Routing: src, Storage: rc,
		RPC: c.roleRPC(m.Name, "metad"), Logger: c.cfg.Logger, Registerer: c.Registerer("metad"), DefaultChunkSize: c.cfg.ChunkSize, DefaultStripe: c.cfg.Stripe,
		GCInterval: c.cfg.GCInterval, Mgmtd: src.Mgmtd(), Addr: m.Addr, ID: m.Name, ReapEvery: c.cfg.ReapEvery,
		MasterKey: c.cfg.MasterKey})
	if err != nil {
		src.Close()
		rc.Close()
		return fmt.Errorf("metad %s: %w", m.Name, err)
	}
	l, err := Listen(m.Addr)
	if err != nil {
		srv.Close()
		src.Close()
		rc.Close()
		return fmt.Errorf("metad %s: %w", m.Name, err)
	}
	go srv.Serve(l)
	m.srv, m.src, m.rc = srv, src, rc
	return nil
}

// StopMetad stops metadata service i; its clients fail over to another.
func (c *Cluster) StopMetad(i int) {
	m := c.metads[i]
	m.mu.Lock()
	srv, src, rc := m.srv, m.src, m.rc
	m.srv, m.src, m.rc = nil, nil, nil
	m.mu.Unlock()
	if srv != nil {
		srv.Close()
		src.Close()
		rc.Close()
	}
}

// Metad returns metadata service i's server, or nil while it is stopped.
func (c *Cluster) Metad(i int) *metad.Server {
	m := c.metads[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.srv
}

// inlineFileMax is the largest file metad keeps in its inode, for both
// metad and the cluster's clients (0: none). The metadata store does not
// encrypt, so a cluster that encrypts chunk content at rest keeps every
// file's bytes in chunks.
func (c *Cluster) inlineFileMax() int {
	switch n := c.cfg.InlineFileMax; {
	case n < 0 || c.cfg.EncryptionKey != nil:
		return 0
	case n == 0:
		return client.DefaultInlineMax
	default:
		return n
	}
}
