package client

import (
	"context"
	"fmt"
	"sync"

	"github.com/flyfs/flyfs/core/durability"
	"github.com/flyfs/flyfs/core/routing"
)

// Durability of data (package durability states the contract): an update
// made under durability.Relaxed (a mount's) is acknowledged by its chain
// before it is durable on the replicas. ChunkIO remembers the chains it
// sent such updates to; Sync makes them durable on every replica of those
// chains, as fsync(2) must.

// unsynced is the set of chains with relaxed updates not synced since.
// One Sync runs at a time (syncing): one that starts while another syncs
// waits for it, since the chains of its own updates may be in the other's
// hands; when that one fails, they are back in the set for it to sync.
type unsynced struct {
	syncing chan struct{} // holds a token while a Sync runs
	mu      sync.Mutex
	chains  map[routing.ChainID]struct{}
}

func (u *unsynced) add(c routing.ChainID) {
	u.mu.Lock()
	if u.chains == nil {
		u.chains = map[routing.ChainID]struct{}{}
	}
	u.chains[c] = struct{}{}
	u.mu.Unlock()
}

func (u *unsynced) take() map[routing.ChainID]struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.chains
	u.chains = nil
	return c
}

// noteUpdate remembers chain if an update under ctx was relaxed. Called
// before the update is sent, so a Sync that starts after the update
// returned always covers it.
func (c *ChunkIO) noteUpdate(ctx context.Context, chain routing.ChainID) {
	if durability.IsRelaxed(ctx) {
		c.unsynced.add(chain)
	}
}

// Sync makes every relaxed update this client made before it durable: each
// node of each chain such an update went to syncs its disks. Chains it
// could not sync stay for the next Sync.
func (c *ChunkIO) Sync(ctx context.Context) error {
	select {
	case c.unsynced.syncing <- struct{}{}:
		defer func() { <-c.unsynced.syncing }()
	case <-ctx.Done():
		return ctx.Err()
	}
	chains := c.unsynced.take()
	if len(chains) == 0 {
		return nil
	}
	info := c.routing.Current()
	addrs := map[string]bool{}
	for id := range chains {
		ch, ok := info.Chain(id)
		if !ok {
			continue // the chain is gone, and its replicas with it
		}
		for _, t := range ch.Targets {
			if a, ok := info.Addr(t.Node); ok {
				addrs[a] = true
			}
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for a := range addrs {
		wg.Go(func() {
			if err := c.storage.Sync(ctx, a); err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("sync storage %s: %w", a, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		for id := range chains {
			c.unsynced.add(id)
		}
	}
	return first
}

// SyncData makes every relaxed update of data this client made before it
// durable on the storage nodes; nothing to do (no call) when there is none.
func (fs *FS) SyncData(ctx context.Context) error { return fs.chunks.Sync(ctx) }

// Sync makes every change this client made before it durable: data on the
// storage nodes, then the namespace (a mount's fsync(2)).
func (fs *FS) Sync(ctx context.Context) error {
	if err := fs.chunks.Sync(ctx); err != nil {
		return err
	}
	return fs.Meta().Sync(ctx)
}
