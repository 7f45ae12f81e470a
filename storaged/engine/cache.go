package engine

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// block is a physical block in use by one chunk.
//
// refs counts the owners that keep the block from being reused: 1 while a
// chunk's current version points at it, plus 1 per open Handle. The block
// returns to the allocator when refs drops to 0, so a Handle keeps reading
// the content it was opened on even after a copy-on-write update.
type block struct {
	loc  blockLoc
	refs atomic.Int32
	// written is the largest Len of any version ever on this block. Bytes past
	// written are seen by no reader, so an append may write there in place.
	// Guarded by the chunk's key lock.
	written uint32
}

// version is an immutable snapshot of a chunk: what a Handle reads.
type version struct {
	meta Meta
	crcs []uint32 // never modified after publication; shared between versions
	blk  *block   // nil iff meta.Len == 0 or the content is inline
	// inline: the content is in the metadata store (inline.go), encrypted
	// under iv on an encrypted disk.
	inline bool
	iv     [16]byte
}

// loc is where the version's record says its content is.
func (v *version) loc() blockLoc {
	switch {
	case v.blk != nil:
		return v.blk.loc
	case v.inline:
		return blockLoc{class: inlineClass, iv: v.iv}
	}
	return blockLoc{class: noClass}
}

const (
	numShards = 64
	numLocks  = 1024
)

// shard is one slice of the in-memory index key -> current version.
type shard struct {
	mu sync.RWMutex
	m  map[Key]*version
	_  [32]byte // keep shards on separate cache lines
}

// keyHash mixes every bit of a key into every bit of the hash: the chain,
// the inode and the chunk index all vary in the low bits the shard and the
// lock are chosen from.
func keyHash(k Key) uint64 {
	a := binary.BigEndian.Uint64(k.Chunk[:8])
	b := binary.BigEndian.Uint64(k.Chunk[8:])
	return mix64(mix64(a^uint64(k.Chain)<<44) + b)
}

// mix64 is splitmix64's finalizer: a bijection whose every output bit
// depends on every input bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func (e *Engine) shard(k Key) *shard { return &e.shards[keyHash(k)%numShards] }

// keyLock serialises writers of one key (and a few unrelated keys sharing
// the stripe). The layer above already serialises writes per chunk; the
// engine still must not corrupt itself if it does not.
func (e *Engine) keyLock(k Key) *sync.Mutex { return &e.locks[(keyHash(k)>>16)%numLocks] }

// current returns k's current version without taking a reference. Only
// writers holding the key lock may use the result beyond the shard lock:
// the version cannot be replaced (so its block cannot be freed) meanwhile.
func (e *Engine) current(k Key) *version {
	sh := e.shard(k)
	sh.mu.RLock()
	v := sh.m[k]
	sh.mu.RUnlock()
	return v
}

// install makes v (nil: none) the current version of k.
func (e *Engine) install(k Key, v *version) {
	sh := e.shard(k)
	sh.mu.Lock()
	if v == nil {
		delete(sh.m, k)
	} else {
		sh.m[k] = v
	}
	sh.mu.Unlock()
}

// unref drops one reference to b, freeing the block on the last one.
func (e *Engine) unref(b *block) {
	if n := b.refs.Add(-1); n == 0 {
		e.alloc.free(b.loc)
	} else if n < 0 {
		e.log.Error("engine: block reference count below zero", "block", b.loc.String())
	}
}
