package client

import (
	"context"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/routing"
)

// NodeStats is what a storage node reports of itself: its disks, its
// targets (with the recovery each feeds), and the client I/O it served.
type NodeStats = storageapi.StatsResp

// IOCounters count the client I/O a storage node served since it started.
type IOCounters = storageapi.IOCounters

// NodeStats asks every storage node routing names for its stats, in
// parallel, each within a second; nodes that do not answer are left out.
func (fs *FS) NodeStats(ctx context.Context, info *routing.Info) map[routing.NodeID]*NodeStats {
	st := storageapi.Client{RPC: fs.rc}
	out := map[routing.NodeID]*NodeStats{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for id, n := range info.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			s, err := st.Stats(cctx, n.Addr)
			if err != nil {
				return
			}
			mu.Lock()
			out[id] = s
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}
