package engine

import (
	"testing"

	"github.com/flyfs/flyfs/core/layout"
)

// TestKeysSpreadOverLocksAndShards: the chunks of one file on one chain,
// and one chunk index of many files, land on many key locks and index
// shards. Writers of different chunks sharing a lock wait on each other's
// data write and sync.
func TestKeysSpreadOverLocksAndShards(t *testing.T) {
	var e Engine
	cases := []struct {
		name string
		key  func(i uint64) Key
	}{
		{"chunks of one file", func(i uint64) Key { return Key{Chain: 3, Chunk: layout.MakeChunkID(42, i)} }},
		{"chunk 0 of many files", func(i uint64) Key { return Key{Chain: 3, Chunk: layout.MakeChunkID(1000+i, 0)} }},
		{"one chunk on many chains", func(i uint64) Key { return Key{Chain: uint32(i), Chunk: layout.MakeChunkID(7, 5)} }},
	}
	for _, c := range cases {
		locks := map[any]bool{}
		shards := map[any]bool{}
		for i := range uint64(256) {
			locks[e.keyLock(c.key(i))] = true
			shards[e.shard(c.key(i))] = true
		}
		// 256 keys thrown at random into 1024 locks fill ~227 of them.
		if len(locks) < 200 || len(shards) < numShards-4 {
			t.Errorf("%s: 256 keys on %d locks and %d shards", c.name, len(locks), len(shards))
		}
	}
}
