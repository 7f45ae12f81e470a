package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/storaged"
	"github.com/flyfs/flyfs/storaged/engine"
)

// Node names one storage node: its id, party name, address and disk
// directory, which survive a stop and start.
type Node struct {
	ID   routing.NodeID
	Name string
	Addr string
	Dir  string
}

type storageRole struct {
	Node
	faults engine.Faults // survives restarts, as a bad disk would
	mu     sync.Mutex
	srv    *storaged.Server
	src    *client.MgmtdSource
	rc     *rpc.Client
}

// Nodes is the number of storage nodes.
func (c *Cluster) Nodes() int { return len(c.nodes) }

// Node describes storage node i.
func (c *Cluster) Node(i int) Node { return c.nodes[i].Node }

// StartNode starts storage node i (again) on its address and disk. It is
// managed: it heartbeats to mgmtd and learns its targets from routing.
func (c *Cluster) StartNode(i int) error {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv != nil {
		return nil
	}
	rc := rpc.NewClient(c.roleRPC(n.Name, "storaged"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src, err := client.NewMgmtdSource(ctx, c.MgmtdAddrs(), rc, c.cfg.HeartbeatTimeout/6)
	if err != nil {
		rc.Close()
		return fmt.Errorf("storaged %s: %w", n.Name, err)
	}
	id, _ := c.ID()
	srv, err := storaged.New(storaged.Config{Node: n.ID, Addr: n.Addr, Disks: []string{n.Dir}, Routing: src, ClusterID: id,
		Mgmtd: src.Mgmtd(), HeartbeatTimeout: c.cfg.HeartbeatTimeout, RPC: c.roleRPC(n.Name, "storaged"), NoSync: c.cfg.NoSync,
		EncryptionKey: c.cfg.EncryptionKey, SegmentSize: c.cfg.SegmentSize, DiskFaults: &n.faults,
		SyncWindow: c.cfg.SyncWindow, InlineMax: c.cfg.InlineMax,
		ForwardTimeout: c.cfg.ForwardTimeout, ResyncBytesPerSec: c.cfg.ResyncBytesPerSec, Logger: c.cfg.Logger,
		Registerer: c.Registerer("storaged")})
	if err != nil {
		src.Close()
		rc.Close()
		return fmt.Errorf("storaged %s: %w", n.Name, err)
	}
	l, err := Listen(n.Addr)
	if err != nil {
		srv.Close()
		src.Close()
		rc.Close()
		return fmt.Errorf("storaged %s: %w", n.Name, err)
	}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, rpc.ErrServerClosed) {
			c.cfg.Logger.Error("storaged serve", "node", n.Name, "err", err)
		}
	}()
	n.srv, n.src, n.rc = srv, src, rc
	return nil
}

// StopNode stops storage node i abruptly: its listener and connections
// close, requests in flight fail, its disk closes. Its data stays.
func (c *Cluster) StopNode(i int) {
	n := c.nodes[i]
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

// DiskFaults fails storage node i's data-file I/O on demand: what a bad
// disk does. The faults stay across a stop and start until healed.
func (c *Cluster) DiskFaults(i int) *engine.Faults { return &c.nodes[i].faults }

// Storage returns storage node i's server, or nil while it is stopped.
func (c *Cluster) Storage(i int) *storaged.Server {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.srv
}

// WipeNode deletes a stopped storage node's data: a replaced disk.
func (c *Cluster) WipeNode(i int) error {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.srv != nil {
		return fmt.Errorf("cluster: storage node %s is running", n.Name)
	}
	return os.RemoveAll(n.Dir)
}

// ChunkClient returns a chunk client dialing as party, over routing from
// mgmtd, that keeps retrying a chunk through failovers for retryFor; close
// stops it.
func (c *Cluster) ChunkClient(ctx context.Context, party string, retryFor time.Duration) (_ *client.ChunkIO, close func(), _ error) {
	rc := rpc.NewClient(c.RPCOptions(party))
	src, err := client.NewMgmtdSource(ctx, c.MgmtdAddrs(), rc, c.cfg.HeartbeatTimeout/6)
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	return client.NewChunkIO(src, rc, retryFor), func() { src.Close(); rc.Close() }, nil
}
