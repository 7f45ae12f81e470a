package storaged

import (
	"sync"

	"github.com/flyfs/flyfs/storaged/engine"
)

// chunkLocks serialises updates of one chunk: an update holds its chunk's lock
// from apply until the chain has committed it, so updates of a chunk reach every
// replica in one order. Entries exist only while held or awaited.
type chunkLocks struct {
	mu    sync.Mutex
	locks map[engine.Key]*chunkLock
}

type chunkLock struct {
	mu   sync.Mutex
	refs int
}

func newChunkLocks() *chunkLocks { return &chunkLocks{locks: map[engine.Key]*chunkLock{}} }

// lock takes k's lock and returns its release.
func (c *chunkLocks) lock(k engine.Key) func() {
	c.mu.Lock()
	l := c.locks[k]
	if l == nil {
		l = &chunkLock{}
		c.locks[k] = l
	}
	l.refs++
	c.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		c.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(c.locks, k)
		}
		c.mu.Unlock()
	}
}
