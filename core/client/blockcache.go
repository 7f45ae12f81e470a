package client

import (
	"container/list"
	"hash/crc32"
	"sync"
	"sync/atomic"
)

// CacheBlock is the unit of the client's memory cache: a 64 KiB-aligned
// range of a file (the storage service reads and verifies whole 64 KiB
// segments anyway, so a 4 KiB miss that fetches its block costs the disk
// nothing more).
const CacheBlock = 64 << 10

// blockCache is the client's memory tier: blocks of file data keyed by
// inode, Gen and block index, so that an open after any change in the
// cluster (a new Gen) misses, as close-to-open asks.
//
// Invariants:
//   - used is the sum of the lengths of the blocks held, and used <= max
//     after every put;
//   - a block's sum is the CRC32C of its data, checked on every hit: a block
//     that fails it is dropped and counted, never served;
//   - a block is inserted only if no write or truncate through this client
//     touched its inode since the fetch began (changedAt is not past the
//     fetch's stamp), so a fetch racing a local write cannot bring back what
//     the write replaced.
type blockCache struct {
	mu     sync.Mutex
	max    int64
	used   int64
	lru    *list.List // front: most recently used; values *cachedBlock
	blocks map[blockKey]*list.Element
	keysOf map[uint64]map[blockKey]struct{} // the blocks held of each inode

	// clock counts local changes; changedAt is the clock at each inode's last
	// one. It is cleared when it grows past maxChanged, and floor then
	// rejects every fetch begun before.
	clock, floor uint64
	changedAt    map[uint64]uint64

	hits, misses, evictions, corrupt atomic.Uint64
}

const maxChanged = 1 << 16

type blockKey struct{ ino, gen, index uint64 }

type cachedBlock struct {
	key  blockKey
	data []byte
	sum  uint32
}

// CacheStats counts what the memory cache did.
type CacheStats struct {
	Capacity, Used                   int64
	Hits, Misses, Evictions, Corrupt uint64
}

func newBlockCache(max int64) *blockCache {
	return &blockCache{max: max, lru: list.New(), blocks: map[blockKey]*list.Element{},
		keysOf: map[uint64]map[blockKey]struct{}{}, changedAt: map[uint64]uint64{}}
}

// get returns the block's data (never to be modified) if it is held and
// intact.
func (c *blockCache) get(k blockKey) ([]byte, bool) {
	c.mu.Lock()
	e, ok := c.blocks[k]
	if !ok {
		c.mu.Unlock()
		c.misses.Add(1)
		return nil, false
	}
	b := e.Value.(*cachedBlock)
	c.lru.MoveToFront(e)
	c.mu.Unlock()
	if crc32.Checksum(b.data, castagnoli) != b.sum {
		c.corrupt.Add(1)
		c.misses.Add(1)
		c.mu.Lock()
		if cur, ok := c.blocks[k]; ok && cur == e {
			c.removeLocked(e)
		}
		c.mu.Unlock()
		return nil, false
	}
	c.hits.Add(1)
	return b.data, true
}

// begin stamps a fetch about to start, for put.
func (c *blockCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clock
}

// put inserts a block fetched from the stamp begin gave, unless its inode
// changed here since; it evicts the least recently used blocks to stay
// within the budget. data is kept as is.
func (c *blockCache) put(k blockKey, data []byte, stamp uint64) {
	if int64(len(data)) > c.max || len(data) == 0 {
		return
	}
	sum := crc32.Checksum(data, castagnoli)
	c.mu.Lock()
	defer c.mu.Unlock()
	if stamp < c.floor || c.changedAt[k.ino] > stamp {
		return
	}
	if e, ok := c.blocks[k]; ok {
		c.removeLocked(e)
	}
	for c.used+int64(len(data)) > c.max && c.lru.Len() > 0 {
		c.removeLocked(c.lru.Back())
		c.evictions.Add(1)
	}
	c.blocks[k] = c.lru.PushFront(&cachedBlock{key: k, data: data, sum: sum})
	keys := c.keysOf[k.ino]
	if keys == nil {
		keys = map[blockKey]struct{}{}
		c.keysOf[k.ino] = keys
	}
	keys[k] = struct{}{}
	c.used += int64(len(data))
}

// changed drops every block of ino and rejects the fetches of it in flight:
// a write or truncate through this client changed it.
func (c *blockCache) changed(ino uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	if len(c.changedAt) >= maxChanged {
		clear(c.changedAt)
		c.floor = c.clock
	}
	c.changedAt[ino] = c.clock
	for k := range c.keysOf[ino] {
		c.removeLocked(c.blocks[k])
	}
}

// removeLocked drops one block.
func (c *blockCache) removeLocked(e *list.Element) {
	b := e.Value.(*cachedBlock)
	c.lru.Remove(e)
	delete(c.blocks, b.key)
	c.used -= int64(len(b.data))
	if keys := c.keysOf[b.key.ino]; keys != nil {
		delete(keys, b.key)
		if len(keys) == 0 {
			delete(c.keysOf, b.key.ino)
		}
	}
}

func (c *blockCache) stats() CacheStats {
	c.mu.Lock()
	used := c.used
	c.mu.Unlock()
	return CacheStats{Capacity: c.max, Used: used, Hits: c.hits.Load(), Misses: c.misses.Load(),
		Evictions: c.evictions.Load(), Corrupt: c.corrupt.Load()}
}
