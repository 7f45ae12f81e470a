package client

import (
	"container/list"
	"context"
	"hash/crc32"
	"sync"
	"sync/atomic"
	"time"
)

// CacheBlock is the unit of the client's memory cache: a 64 KiB-aligned
// range of a file (the storage service reads and verifies whole 64 KiB
// segments anyway, so a 4 KiB miss that fetches its block costs the disk
// nothing more).
const CacheBlock = 64 << 10

// blockCache is the client's cache of file data: a memory tier and,
// optionally, a disk tier under it (diskTier). Blocks are keyed by inode,
// Gen and block index, so that an open after any change in the cluster (a
// new Gen) misses, as close-to-open asks.
//
// Invariants:
//   - used is the sum of the lengths of the blocks held in memory, and
//     used <= max after every put (max 0: no memory tier);
//   - a block's sum is the CRC32C of its data, checked on every hit: a block
//     that fails it is dropped and counted, never served (the disk tier
//     checks its own the same way);
//   - a block enters either tier only if no write or truncate through this
//     client is in flight on its inode and none began since the block's
//     fetch did (current), so a fetch racing a local write cannot bring back
//     what the write replaced. The check and the disk tier's record of the
//     block happen under mu, as does a change's drop of the inode's blocks in
//     both tiers: a disk block that outlives a crash was current when it
//     was recorded;
//   - with a TTL, a block older than it is not served (in the disk tier, a
//     region older than it).
type blockCache struct {
	mu     sync.Mutex
	max    int64
	used   int64
	lru    *list.List // front: most recently used; values *cachedBlock
	blocks map[blockKey]*list.Element
	keysOf map[uint64]map[blockKey]struct{} // the blocks held of each inode

	// clock counts local changes; changedAt is the clock at each inode's
	// latest change begun or ended, writing counts the changes in flight. changedAt is
	// cleared when it grows past maxChanged, and floor then rejects every
	// fetch begun before.
	clock, floor uint64
	changedAt    map[uint64]uint64
	writing      map[uint64]int

	ttl time.Duration
	now func() time.Time

	disk    *diskTier      // nil: memory only
	queue   chan diskWrite // blocks for the disk tier's writer
	written chan struct{}  // closed when the writer ends
	qmu     sync.RWMutex   // held to send on queue, and to close it
	enq     sync.Mutex     // held to queue a run of blocks together
	closed  bool           // the queue is closed (under qmu)

	hits, misses, evictions, corrupt atomic.Uint64
	diskSkipped, diskFailed          atomic.Uint64
}

const maxChanged = 1 << 16

// diskQueue is how many fetched blocks may wait for the disk tier's writer;
// past it a block is not written (the read never waits on the local disk).
const diskQueue = 256

type blockKey struct{ ino, gen, index uint64 }

type cachedBlock struct {
	key  blockKey
	data []byte
	sum  uint32
	at   time.Time // when put, for the TTL
}

type diskWrite struct {
	key   blockKey
	data  []byte
	stamp uint64
	done  chan struct{} // a marker (no block): closed when the writer reaches it
}

// TierStats counts what one cache tier did.
type TierStats struct {
	Capacity  int64  `json:"capacity_bytes"`
	Used      int64  `json:"used_bytes"`
	Hits      uint64 `json:"hits"`
	Misses    uint64 `json:"misses"`
	Evictions uint64 `json:"evictions"`
	Corrupt   uint64 `json:"corrupt"`
	// Disk tier only: blocks not written because its writer was behind, and
	// writes the local disk failed.
	Skipped uint64 `json:"skipped,omitempty"`
	Failed  uint64 `json:"failed,omitempty"`
}

// CacheStats counts what each cache tier did.
type CacheStats struct {
	Memory TierStats `json:"memory"`
	Disk   TierStats `json:"disk"`
	Dir    string    `json:"dir,omitempty"` // the disk tier's directory
}

func newBlockCache(max int64) *blockCache {
	return &blockCache{max: max, lru: list.New(), blocks: map[blockKey]*list.Element{},
		keysOf: map[uint64]map[blockKey]struct{}{}, changedAt: map[uint64]uint64{},
		writing: map[uint64]int{}, now: time.Now}
}

// withDisk puts the disk tier d under the memory tier and starts its writer.
func (c *blockCache) withDisk(d *diskTier) *blockCache {
	c.disk, c.queue, c.written = d, make(chan diskWrite, diskQueue), make(chan struct{})
	go c.writeDisk()
	return c
}

// get returns the block's data (never to be modified) if a tier holds it
// intact; a disk hit is brought into memory.
func (c *blockCache) get(k blockKey) ([]byte, bool) { return c.getInto(k, nil) }

// getInto is get that, without a memory tier, reads a disk hit into dst
// when dst is long enough (the caller's buffer, where the block goes): no
// copy of the caller's own. dst may hold garbage after a miss.
func (c *blockCache) getInto(k blockKey, dst []byte) ([]byte, bool) {
	if c.max > 0 {
		if data, ok := c.getMem(k); ok {
			return data, true
		}
		dst = nil // the memory tier keeps what the disk tier returns
	}
	if c.disk == nil {
		return nil, false
	}
	stamp := c.begin()
	data, ok := c.disk.get(k, c.now(), dst)
	if ok && c.max > 0 {
		c.mu.Lock()
		if c.currentLocked(k.ino, stamp) {
			c.putMemLocked(k, data)
		}
		c.mu.Unlock()
	}
	return data, ok
}

func (c *blockCache) getMem(k blockKey) ([]byte, bool) {
	c.mu.Lock()
	e, ok := c.blocks[k]
	if !ok {
		c.mu.Unlock()
		c.misses.Add(1)
		return nil, false
	}
	b := e.Value.(*cachedBlock)
	if c.ttl > 0 && c.now().Sub(b.at) > c.ttl {
		c.removeLocked(e)
		c.mu.Unlock()
		c.misses.Add(1)
		return nil, false
	}
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

// holds says whether a tier holds the block with at least n bytes, without
// counting a hit or a miss or checking its sum (a prefetch asking what to
// fetch).
func (c *blockCache) holds(k blockKey, n uint64) bool {
	c.mu.Lock()
	if e, ok := c.blocks[k]; ok && uint64(len(e.Value.(*cachedBlock).data)) >= n {
		c.mu.Unlock()
		return true
	}
	c.mu.Unlock()
	return c.disk != nil && c.disk.holds(k, n, c.now())
}

// putRun is put for a prefetch, of consecutive blocks from first on: it
// waits for room in the disk tier's queue rather than leave a block
// unwritten, and queues the run's blocks together (under enq), so that the
// writer, which merges consecutive blocks, writes them in one go even while
// other prefetches queue theirs.
func (c *blockCache) putRun(ctx context.Context, first blockKey, blocks [][]byte, stamp uint64) error {
	c.mu.Lock()
	if !c.currentLocked(first.ino, stamp) {
		c.mu.Unlock()
		return nil
	}
	for i, data := range blocks {
		k := first
		k.index += uint64(i)
		c.putMemLocked(k, data)
	}
	c.mu.Unlock()
	if c.disk == nil {
		return nil
	}
	c.enq.Lock()
	defer c.enq.Unlock()
	c.qmu.RLock()
	defer c.qmu.RUnlock()
	for i, data := range blocks {
		if c.closed {
			return nil
		}
		k := first
		k.index += uint64(i)
		select {
		case c.queue <- diskWrite{key: k, data: data, stamp: stamp}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// begin stamps a fetch about to start, for put.
func (c *blockCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clock
}

// currentLocked says whether a block of ino fetched from stamp may be kept.
func (c *blockCache) currentLocked(ino, stamp uint64) bool {
	return stamp >= c.floor && c.changedAt[ino] <= stamp && c.writing[ino] == 0
}

// put keeps a block fetched from the stamp begin gave, unless its inode
// changed here since: in memory at once (evicting the least recently used
// blocks to stay within the budget), on disk by the writer. data is kept as
// is.
func (c *blockCache) put(k blockKey, data []byte, stamp uint64) {
	if len(data) == 0 {
		return
	}
	c.mu.Lock()
	if !c.currentLocked(k.ino, stamp) {
		c.mu.Unlock()
		return
	}
	c.putMemLocked(k, data)
	c.mu.Unlock()
	if c.disk != nil {
		c.qmu.RLock()
		if !c.closed {
			w := diskWrite{key: k, data: data, stamp: stamp}
			select {
			case c.queue <- w:
			default:
				// The writer is behind: wait a little for it (a fill that
				// keeps up is worth a slower first read), then skip.
				t := time.NewTimer(diskWait)
				select {
				case c.queue <- w:
				case <-t.C:
					c.diskSkipped.Add(1)
				}
				t.Stop()
			}
		}
		c.qmu.RUnlock()
	}
}

func (c *blockCache) putMemLocked(k blockKey, data []byte) {
	if int64(len(data)) > c.max {
		return
	}
	if e, ok := c.blocks[k]; ok {
		c.removeLocked(e)
	}
	for c.used+int64(len(data)) > c.max && c.lru.Len() > 0 {
		c.removeLocked(c.lru.Back())
		c.evictions.Add(1)
	}
	c.blocks[k] = c.lru.PushFront(&cachedBlock{key: k, data: data, sum: crc32.Checksum(data, castagnoli), at: c.now()})
	keys := c.keysOf[k.ino]
	if keys == nil {
		keys = map[blockKey]struct{}{}
		c.keysOf[k.ino] = keys
	}
	keys[k] = struct{}{}
	c.used += int64(len(data))
}

// writeDisk writes queued blocks to the disk tier, recording each only if
// it is still current once written. Blocks that follow one another in a
// region go out in one write of up to writeRun blocks (a sequential reader
// queues them a few at a time, so a short run waits up to runWait for the
// rest), diskWriters runs at a time: large writes, several deep, keep up
// where single blocks would fall behind.
func (c *blockCache) writeDisk() {
	defer close(c.written)
	runs := make(chan []diskWrite)
	var writing, writers sync.WaitGroup
	for range diskWriters {
		writers.Go(func() {
			for run := range runs {
				c.writeBlocks(run)
				writing.Done()
			}
		})
	}
	defer writers.Wait()
	defer close(runs)
	var run []diskWrite
	flush := func() {
		if len(run) > 0 {
			writing.Add(1)
			runs <- run
			run = nil
		}
	}
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	for {
		var w diskWrite
		ok := true
		if len(run) == 0 {
			w, ok = <-c.queue
		} else {
			wait.Reset(runWait)
			select {
			case w, ok = <-c.queue:
				wait.Stop()
			case <-wait.C:
				flush()
				continue
			}
		}
		switch {
		case !ok:
			flush()
			return
		case w.done != nil:
			flush()
			writing.Wait() // every block queued before the marker
			close(w.done)
			continue
		case len(run) > 0 && !follows(run[len(run)-1].key, w.key):
			flush()
		}
		run = append(run, w)
		if len(run) == writeRun {
			flush()
		}
	}
}

// diskWait is how long a read waits for room in the disk tier's queue
// before it lets the block go unwritten.
const diskWait = 10 * time.Millisecond

// diskWriters is how many runs are written at once.
const diskWriters = 2

// runWait is how long a short run of blocks waits for the next.
const runWait = 2 * time.Millisecond

// writeRun is the most blocks one write to the disk tier carries (1 MiB).
const writeRun = 16

// follows says whether block b comes right after a in the same region.
func follows(a, b blockKey) bool {
	ra, _ := split(a)
	rb, _ := split(b)
	return ra == rb && b.index == a.index+1
}

// writeBlocks writes a run of consecutive blocks of one region.
func (c *blockCache) writeBlocks(run []diskWrite) {
	data := make([][]byte, len(run))
	lens, sums := make([]uint32, len(run)), make([]uint32, len(run))
	for i := range run {
		data[i] = run[i].data
		lens[i], sums[i] = uint32(len(data[i])), crc32.Checksum(data[i], castagnoli)
	}
	r, err := c.disk.writeData(run[0].key, data, c.now())
	if err != nil {
		c.diskFailed.Add(uint64(len(run)))
		return
	}
	keep := make([]bool, len(run))
	_, first := split(run[0].key)
	c.mu.Lock()
	for i, w := range run {
		keep[i] = c.currentLocked(w.key.ino, w.stamp)
	}
	c.disk.mu.Lock()
	c.disk.setSlotsLocked(r, first, lens, sums, keep)
	c.disk.mu.Unlock()
	c.mu.Unlock()
}

// drain waits until the disk tier's writer has written (or skipped) every
// block queued before the call.
func (c *blockCache) drain() {
	if c.disk == nil {
		return
	}
	done := make(chan struct{})
	c.qmu.RLock()
	if c.closed {
		c.qmu.RUnlock()
		return
	}
	c.queue <- diskWrite{done: done} // the writer makes room
	c.qmu.RUnlock()
	<-done
}

// change marks the start of a write or truncate of ino through this client:
// it drops the inode's blocks from both tiers, and until the returned func
// runs (when the change has landed or failed) no block of ino is kept; the
// fetches begun before either end are not kept either.
func (c *blockCache) change(ino uint64) (done func()) {
	c.mu.Lock()
	c.writing[ino]++
	c.markLocked(ino)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		if c.writing[ino]--; c.writing[ino] <= 0 {
			delete(c.writing, ino)
		}
		c.markLocked(ino)
		c.mu.Unlock()
	}
}

// changed is a change of ino already over.
func (c *blockCache) changed(ino uint64) { c.change(ino)() }

func (c *blockCache) markLocked(ino uint64) {
	c.clock++
	if len(c.changedAt) >= maxChanged {
		clear(c.changedAt)
		c.floor = c.clock
	}
	c.changedAt[ino] = c.clock
	for k := range c.keysOf[ino] {
		c.removeLocked(c.blocks[k])
	}
	if c.disk != nil {
		c.disk.mu.Lock()
		c.disk.dropInoLocked(ino)
		c.disk.mu.Unlock()
	}
}

// removeLocked drops one block from memory.
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
	s := CacheStats{Memory: TierStats{Capacity: c.max, Used: used, Hits: c.hits.Load(), Misses: c.misses.Load(),
		Evictions: c.evictions.Load(), Corrupt: c.corrupt.Load()}}
	if c.disk != nil {
		s.Disk = c.disk.stats()
		s.Disk.Skipped, s.Disk.Failed = c.diskSkipped.Load(), c.diskFailed.Load()
		s.Dir = c.disk.dir
	}
	return s
}

// close stops the disk tier's writer once the queued blocks are written,
// and closes the tier. A second close does nothing.
func (c *blockCache) close() {
	if c.disk == nil {
		return
	}
	c.qmu.Lock()
	if c.closed {
		c.qmu.Unlock()
		return
	}
	c.closed = true
	close(c.queue)
	c.qmu.Unlock()
	<-c.written
	c.disk.close()
}
