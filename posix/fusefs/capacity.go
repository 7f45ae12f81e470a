package fusefs

import (
	"context"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
)

// MgmtdCapacity returns an Options.Capacity that sums the disk usage the
// storage nodes report to mgmtd, the free space of a file system several
// disks share counted once, asking at most every few seconds (df calls
// statfs often).
func MgmtdCapacity(m *client.Mgmtd) func(ctx context.Context) (used, free uint64, err error) {
	var (
		mu         sync.Mutex
		at         time.Time
		used, free uint64
	)
	return func(ctx context.Context) (uint64, uint64, error) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) < 5*time.Second {
			return used, free, nil
		}
		r, err := m.ListNodes(ctx)
		if err != nil {
			return 0, 0, err
		}
		used, free = 0, mgmtdapi.SpaceOf(r.Nodes).FreeBytes
		for _, n := range r.Nodes {
			for _, d := range n.Disks {
				used += d.UsedBytes
			}
		}
		at = time.Now()
		return used, free, nil
	}
}
