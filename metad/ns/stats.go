package ns

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/flyfs/flyfs/core/kv"
)

// StatFS counters. A single counter key would be rewritten by every create and
// so serialise them all; even sharded counters read-modify-write conflict now
// and then. Instead every transaction that changes the inode count or the sum
// of file lengths blind-writes its own delta key (a fresh random nonce per
// attempt, so an attempt that committed and was retried after a maybe-committed
// keeps its delta and the retry, which sees the committed state, adds only what
// it changes itself). Deltas sum exactly because each is computed from the
// state its own serializable transaction read. A fold moves old deltas into the
// STAB base in its own transaction; StatFS = base + remaining deltas.

type statDelta struct {
	Inodes int64 `cbor:"1,keyasint,omitempty"`
	Bytes  int64 `cbor:"2,keyasint,omitempty"`
}

// foldEvery: a Namespace folds after writing this many deltas, keeping StatFS's
// scan short.
const foldEvery = 4096

// foldAge: only deltas at least this old are folded, so folds rarely read a key
// range that a running transaction is about to write into (which would only
// make the fold retry: writers never read deltas).
const foldAge = 2 * time.Second

func (n *Namespace) writeDelta(tx kv.Txn, now int64, d statDelta) {
	key := binary.BigEndian.AppendUint64(append([]byte(nil), tagStatDelta...), uint64(now))
	key = binary.LittleEndian.AppendUint64(key, rand.Uint64())
	tx.Set(key, encode(&d))
	n.deltas.Add(1)
}

// FSStats are the namespace totals.
type FSStats struct {
	Inodes int64 // inodes, including removed ones not yet reclaimed by GC
	Bytes  int64 // sum of file lengths
}

// StatFS returns the inode count and the sum of file lengths.
func (n *Namespace) StatFS(ctx context.Context) (FSStats, error) {
	var st FSStats
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		var err error
		st, _, err = readStats(ctx, tx)
		return err
	})
	if err != nil {
		return FSStats{}, fmt.Errorf("ns: statfs: %w", err)
	}
	return st, nil
}

// readStats sums the base and every delta (snapshot reads).
func readStats(ctx context.Context, tx kv.ReadTxn) (FSStats, int, error) {
	var base statDelta
	v, found, err := tx.SnapshotGet(ctx, keyStatBase)
	if err != nil {
		return FSStats{}, 0, err
	}
	if found {
		if err := decode(v, &base); err != nil {
			return FSStats{}, 0, err
		}
	}
	st := FSStats{Inodes: base.Inodes, Bytes: base.Bytes}
	begin, end := tagStatDelta, prefixEnd(tagStatDelta)
	count := 0
	for {
		res, err := tx.SnapshotGetRange(ctx, begin, end, kv.RangeOptions{Limit: 4096})
		if err != nil {
			return FSStats{}, 0, err
		}
		for _, e := range res.KVs {
			var d statDelta
			if err := decode(e.Value, &d); err != nil {
				return FSStats{}, 0, err
			}
			st.Inodes += d.Inodes
			st.Bytes += d.Bytes
		}
		count += len(res.KVs)
		if !res.More {
			return st, count, nil
		}
		begin = kv.KeyAfter(res.KVs[len(res.KVs)-1].Key)
	}
}

// foldStats moves deltas older than foldAge into the base, 1024 per
// transaction. The fold reads the deltas and the base with conflict tracking:
// two folds, or a delta landing in the range it read, make it retry.
func (n *Namespace) foldStats(ctx context.Context) error {
	for {
		more := false
		err := n.db.Run(ctx, func(tx kv.Txn) error {
			more = false
			cutoff := n.now() - foldAge.Nanoseconds()
			end := binary.BigEndian.AppendUint64(append([]byte(nil), tagStatDelta...), uint64(max(cutoff, 0)))
			res, err := tx.GetRange(ctx, tagStatDelta, end, kv.RangeOptions{Limit: 1024})
			if err != nil || len(res.KVs) == 0 {
				return err
			}
			var base statDelta
			v, found, err := tx.Get(ctx, keyStatBase)
			if err != nil {
				return err
			}
			if found {
				if err := decode(v, &base); err != nil {
					return err
				}
			}
			for _, e := range res.KVs {
				var d statDelta
				if err := decode(e.Value, &d); err != nil {
					return err
				}
				base.Inodes += d.Inodes
				base.Bytes += d.Bytes
				tx.Clear(e.Key)
			}
			tx.Set(keyStatBase, encode(&base))
			more = res.More
			return nil
		})
		if err != nil {
			return fmt.Errorf("ns: fold statfs deltas: %w", err)
		}
		if !more {
			return nil
		}
	}
}
