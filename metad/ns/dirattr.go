package ns

import (
	"context"
	"fmt"

	"github.com/flyfs/flyfs/core/kv"
)

// Directory attributes kept off the directory inode, so that creating a file
// never rewrites its parent: the time of the latest entry change and the
// count of subdirectories. Both live under the directory's DMTI key:
//
//	DMTI dir(8)           -> time of the latest entry change (blind writes)
//	DMTI dir(8) shard(1)  -> subdirectories whose id is shard mod 16
//
// so Stat reads them with one range read.
//
// Times. A directory's mtime/ctime move on every entry change. Writing them
// into the directory inode would make every create in a directory conflict
// with every other (each would read-modify-write the parent inode). Instead
// ops blind-write the time into the directory's DMTI key, which nobody reads
// with conflict tracking, and Stat reports the later of the inode's times and
// that key. Concurrent writers race (last commit wins), so the value may lag
// by the length of a transaction: a fine price for conflict-free creates. An
// explicit mtime (utimes) clears the key, so it shows until the next change.
//
// Link count. A directory's nlink is 2 (its entry in its parent and its own
// ".") plus one per subdirectory (each one's ".."). File creates never touch
// the count; mkdir, rmdir and moves of directories read-modify-write one of
// 16 shards, the one of the subdirectory's id, so concurrent mkdirs in one
// directory conflict only when their ids share a shard, and each shard is the
// exact number of subdirectories with ids in it (fsck checks every shard).
// The stored Nlink of a live directory stays 1 (0: removed); Stat reports 2
// plus the shards for directories with CountsSubdirs set (every directory
// made since the count exists), and 1, as before, for older ones.

const subdirShards = 16

func subdirKey(dir, child uint64) []byte {
	return append(dirTimeKey(dir), byte(child%subdirShards))
}

// addSubdir counts child, a directory, into (delta 1) or out of (delta -1)
// dir's subdirectories.
func (o *op) addSubdir(dir, child uint64, delta int64) error {
	o.subdirs = true
	key := subdirKey(dir, child)
	v, found, err := o.tx.Get(o.ctx, key)
	if err != nil {
		return err
	}
	var n int64
	if found {
		if err := decode(v, &n); err != nil {
			return err
		}
	}
	if n += delta; n == 0 {
		o.tx.Clear(key)
	} else {
		o.tx.Set(key, encode(n))
	}
	return nil
}

// clearDirAttrs removes everything kept off a directory inode.
func (o *op) clearDirAttrs(dir uint64) {
	p := dirTimeKey(dir)
	o.tx.ClearRange(p, prefixEnd(p))
}

// dirAttrs reads what is kept off the inode of dir (snapshot reads): the
// latest entry change's time (0 if none recorded) and the subdirectories.
//
// The time key is read alone, then the shards past it: every entry change
// writes the time key again, and a range read starting at it would step
// over each of its versions the store still keeps (thousands in a busy
// directory), where a point read takes the newest.
func dirAttrs(ctx context.Context, tx kv.ReadTxn, dir uint64) (t, subdirs int64, err error) {
	p := dirTimeKey(dir)
	v, found, err := tx.SnapshotGet(ctx, p)
	if err != nil {
		return 0, 0, err
	}
	if found {
		if err := decode(v, &t); err != nil {
			return 0, 0, err
		}
	}
	shards := append(p[:len(p):len(p)], 0)
	res, err := tx.SnapshotGetRange(ctx, shards, prefixEnd(p), kv.RangeOptions{Limit: subdirShards + 1})
	if err != nil {
		return 0, 0, err
	}
	for _, e := range res.KVs {
		if len(e.Key) != len(p)+1 {
			return 0, 0, fail(ErrIO, "directory %d: malformed attribute key %x", dir, e.Key)
		}
		var n int64
		if err := decode(e.Value, &n); err != nil {
			return 0, 0, err
		}
		subdirs += n
	}
	return t, subdirs, nil
}

// dirView completes a directory inode as Stat reports it: times include the
// latest entry change, nlink counts the subdirectories.
func dirView(ctx context.Context, tx kv.ReadTxn, in *Inode) error {
	t, subdirs, err := dirAttrs(ctx, tx, in.ID)
	if err != nil {
		return fmt.Errorf("directory %d: %w", in.ID, err)
	}
	in.Mtime = max(in.Mtime, t)
	in.Ctime = max(in.Ctime, t)
	if in.Nlink > 0 && in.CountsSubdirs {
		in.Nlink = uint32(2 + max(subdirs, 0))
	}
	return nil
}

// newDirView is dirView of a directory this transaction made: no entries.
func newDirView(in *Inode) Inode {
	v := *in
	v.Nlink = 2
	return v
}
