package ns

import (
	"context"

	"github.com/flyfs/flyfs/core/kv"
)

// A directory's mtime/ctime move on every entry change. Writing them into the
// directory inode would make every create in a directory conflict with every
// other (each would read-modify-write the parent inode). Instead ops blind-write
// the time into the directory's DMTI key, which nobody reads with conflict
// tracking, and Stat reports the later of the inode's times and that key.
// Concurrent writers race (last commit wins), so the value may lag by the
// length of a transaction: a fine price for conflict-free creates.

func mergeDirTime(ctx context.Context, tx kv.ReadTxn, in *Inode) error {
	v, found, err := tx.SnapshotGet(ctx, dirTimeKey(in.ID))
	if err != nil || !found {
		return err
	}
	var t int64
	if err := decode(v, &t); err != nil {
		return err
	}
	in.Mtime = max(in.Mtime, t)
	in.Ctime = max(in.Ctime, t)
	return nil
}
