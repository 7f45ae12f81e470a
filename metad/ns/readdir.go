package ns

import (
	"context"
	"fmt"

	"github.com/flyfs/flyfs/core/kv"
)

// ReadDir returns up to limit entries of directory dir whose names sort after
// `after` (byte order), and whether more follow; limit <= 0 means
// Options.ReadDirLimit. A page is one contiguous range read of the directory's
// DENT keys at one version, and pages continue after the last name returned,
// so an entry that exists during the whole listing is returned exactly once,
// whatever is inserted or removed meanwhile. "." and ".." are not listed.
func (n *Namespace) ReadDir(ctx context.Context, dir uint64, after string, limit int) ([]DirEntry, bool, error) {
	if limit <= 0 {
		limit = n.opts.ReadDirLimit
	}
	var out []DirEntry
	var more bool
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		out, more = nil, false
		in, err := getInode(ctx, tx, dir, true)
		if err != nil {
			return err
		}
		if in.Type != TypeDir {
			return fail(ErrNotDir, "readdir of a %s", in.Type)
		}
		p := dentryPrefix(dir)
		begin := p
		if after != "" {
			begin = kv.KeyAfter(dentryKey(dir, after))
		}
		res, err := tx.SnapshotGetRange(ctx, begin, prefixEnd(p), kv.RangeOptions{Limit: limit})
		if err != nil {
			return err
		}
		out = make([]DirEntry, 0, len(res.KVs))
		for _, e := range res.KVs {
			var d Dentry
			if err := decode(e.Value, &d); err != nil {
				return err
			}
			out = append(out, DirEntry{Name: string(e.Key[len(p):]), Ino: d.Ino, Type: d.Type})
		}
		more = res.More
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("readdir %d: %w", dir, err)
	}
	return out, more, nil
}
