package ns

import (
	"context"
	"encoding/binary"
	"fmt"
	"github.com/flyfs/flyfs/core/durability"
	"math/rand/v2"
	"sync"

	"github.com/flyfs/flyfs/core/kv"
)

// Inode ids come in batches of allocBatch from allocShards counters. Counter
// shard s at value v stands for batch b = v*allocShards + s, the ids
// [(b+1)*allocBatch, (b+2)*allocBatch). Claiming a batch bumps one random
// counter in its own small transaction, so no single key is hot and ids are
// unique across every Namespace on the store. A batch lost in a crash (or
// claimed by a commit that reported maybe-committed) only leaves a gap.
// Both numbers are part of the on-disk format: never change them.
const (
	allocShards = 64
	allocBatch  = 1024
)

type allocator struct {
	db        *kv.DB
	mu        sync.Mutex
	next, end uint64
}

func newAllocator(db *kv.DB) *allocator { return &allocator{db: db} }

// id returns a fresh inode id.
func (a *allocator) id(ctx context.Context) (uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == a.end {
		base, err := claimBatch(ctx, a.db, rand.IntN(allocShards))
		if err != nil {
			return 0, err
		}
		a.next, a.end = base, base+allocBatch
	}
	id := a.next
	a.next++
	return id, nil
}

// claimBatch bumps counter shard and returns the first id of its batch.
func claimBatch(ctx context.Context, db *kv.DB, shard int) (uint64, error) {
	var base uint64
	// Durable before any id of the batch is used: chunks are named after
	// inode ids, and a batch handed out twice would mix two files' chunks.
	err := db.Run(durability.Strict(ctx), func(tx kv.Txn) error {
		key := allocKey(shard)
		v, found, err := tx.Get(ctx, key)
		if err != nil {
			return err
		}
		var n uint64
		if found {
			if len(v) != 8 {
				return fmt.Errorf("ns: allocator shard %d holds %d bytes: %w", shard, len(v), ErrIO)
			}
			n = binary.LittleEndian.Uint64(v)
		}
		tx.Set(key, binary.LittleEndian.AppendUint64(nil, n+1))
		base = (n*allocShards + uint64(shard) + 1) * allocBatch
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("ns: claim inode ids: %w", err)
	}
	return base, nil
}

// batchOf returns the counter shard and value that hand out id (for fsck);
// ok is false for ids below the first batch (the root).
func batchOf(id uint64) (shard int, value uint64, ok bool) {
	if id < allocBatch {
		return 0, 0, false
	}
	b := id/allocBatch - 1
	return int(b % allocShards), b / allocShards, true
}
