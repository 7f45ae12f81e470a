package cluster

import (
	"fmt"
	"sync"

	"github.com/flyfs/flyfs/mgmtd"
)

// mgmtdRole is one cluster manager; its address survives a stop and start.
type mgmtdRole struct {
	ID, Addr string
	mu       sync.Mutex
	srv      *mgmtd.Server
}

// Mgmtds is the number of cluster managers.
func (c *Cluster) Mgmtds() int { return len(c.mgmtds) }

// MgmtdAddrs lists the cluster managers' addresses.
func (c *Cluster) MgmtdAddrs() []string {
	out := make([]string, len(c.mgmtds))
	for i, m := range c.mgmtds {
		out[i] = m.Addr
	}
	return out
}

// MgmtdName is cluster manager i's id, which is also its party name.
func (c *Cluster) MgmtdName(i int) string { return c.mgmtds[i].ID }

// StartMgmtd starts cluster manager i (again) on its address.
func (c *Cluster) StartMgmtd(i int) error {
	m := c.mgmtds[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.srv != nil {
		return nil
	}
	srv, err := mgmtd.New(mgmtd.Config{ID: m.ID, Addr: m.Addr, KV: c.kv, HeartbeatTimeout: c.cfg.HeartbeatTimeout,
		ScanInterval: c.cfg.ScanInterval, RPC: c.roleRPC(m.ID, "mgmtd"), Logger: c.cfg.Logger, Registerer: c.Registerer("mgmtd")})
	if err != nil {
		return err
	}
	l, err := Listen(m.Addr)
	if err != nil {
		srv.Close()
		return fmt.Errorf("mgmtd %s: %w", m.ID, err)
	}
	go srv.Serve(l)
	m.srv = srv
	return nil
}

// StopMgmtd stops cluster manager i; it hands its lease over first.
func (c *Cluster) StopMgmtd(i int) {
	m := c.mgmtds[i]
	m.mu.Lock()
	srv := m.srv
	m.srv = nil
	m.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// Mgmtd returns cluster manager i's server, or nil while it is stopped.
func (c *Cluster) Mgmtd(i int) *mgmtd.Server {
	m := c.mgmtds[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.srv
}
