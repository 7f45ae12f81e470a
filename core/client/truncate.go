package client

import (
	"context"
	"fmt"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
)

// dropChunksPast makes storage agree with a file cut to size: the chunk the
// new end falls in is cut to it, and every later chunk is removed on every
// chain of the file. metad changed the length first, so readers never see
// the stale bytes (reads stop at the length); a later extension must read
// zeros there, which is why the bytes must really go. Only the file's own
// chunks go: metad cut its layers' limits to size in the same change.
func (fs *FS) dropChunksPast(ctx context.Context, in metaapi.Inode, size uint64) error {
	defer fs.changing(in.ID)()
	if in.Type != metaapi.TypeFile || in.Layout.TableID == 0 || in.Layout.ChunkSize == 0 || len(in.Inline) > 0 {
		return nil // an inline file has no chunks
	}
	l := in.Layout
	chains, err := fs.chainsOf(l)
	if err != nil {
		return err
	}
	cs := uint64(l.ChunkSize)
	first := size / cs // the first chunk index to remove entirely
	if size%cs != 0 {
		idx := size / cs
		_, err := fs.chunks.Update(ctx, Update{Chain: chains[idx%uint64(len(chains))], Chunk: layout.MakeChunkID(in.DataID(), idx),
			Kind: storageapi.KindTruncate, Length: uint32(size % cs), ChunkSize: l.ChunkSize,
			Base: layout.LayerChunks(in.Layers, idx, l.ChunkSize)})
		if err != nil {
			return fmt.Errorf("cut chunk %d: %w", idx, err)
		}
		first++
	}
	_, end := layout.InodeChunks(in.DataID())
	for _, c := range chains {
		if err := fs.chunks.RemoveRange(ctx, c, layout.MakeChunkID(in.DataID(), first), end); err != nil {
			return fmt.Errorf("remove chunks past %d on chain %d: %w", size, c, err)
		}
	}
	return nil
}

// chainsOf returns the chains of a layout, in the file's order.
func (fs *FS) chainsOf(l layout.Layout) ([]routing.ChainID, error) {
	chains, ok := fs.routing.Current().Table(l.TableID, l.TableVersion)
	if !ok {
		return nil, fmt.Errorf("chain table %d version %d is not in routing", l.TableID, l.TableVersion)
	}
	return l.Chains(layout.ChainTable{ID: l.TableID, Version: l.TableVersion, Chains: chains})
}
