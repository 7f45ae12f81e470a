package metad

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/metad/ns"
)

// maxSpills bounds how often one open moves a file's inline bytes to chunks
// and tries again (another close may inline nothing new: a spilled file is
// never inline again, so a second round is already rare).
const maxSpills = 3

// spillRetry runs an open that may find its file inline (ns.ErrInlined):
// the file's bytes go to chunks and the open runs again.
func (s *Server) spillRetry(ctx context.Context, open func() error) error {
	for try := 0; ; try++ {
		err := open()
		var inl *ns.InlinedError
		if !errors.As(err, &inl) || try == maxSpills {
			return err
		}
		if err := s.spill(ctx, inl.Ino); err != nil {
			return err
		}
	}
}

// spill writes inline file ino's bytes to the chunks of a fresh data id and
// has the namespace adopt them (ns/inline.go). Chunks a spill wrote but lost
// to another spill are deleted here.
func (s *Server) spill(ctx context.Context, ino uint64) error {
	if s.chunks == nil {
		return fmt.Errorf("spill inline file %d: this metad reaches no storage", ino)
	}
	res, err := s.ns.Open(ctx, ino, os.O_RDONLY, "") // with the inline bytes
	in := res.Inode
	if err != nil || len(in.Inline) == 0 {
		return err
	}
	data, err := s.ns.NewDataID(ctx)
	if err != nil {
		return err
	}
	chains, err := s.chainsOf(in.Layout)
	if err != nil {
		return fmt.Errorf("spill inline file %d: %w", ino, err)
	}
	l := in.Layout
	pieces, err := l.Split(0, uint64(len(in.Inline)))
	if err != nil {
		return err
	}
	for _, pc := range pieces {
		_, err := s.chunks.Update(ctx, client.Update{Chain: chains[pc.ChunkIndex%uint64(len(chains))],
			Chunk: layout.MakeChunkID(data, pc.ChunkIndex), Kind: storageapi.KindWrite, Offset: pc.OffsetInChunk,
			Data: in.Inline[pc.OffsetInBuffer : pc.OffsetInBuffer+uint64(pc.Length)], ChunkSize: l.ChunkSize})
		if err != nil {
			return fmt.Errorf("spill inline file %d: %w", ino, err)
		}
	}
	won, err := s.ns.Spilled(ctx, ino, in.Gen, data)
	if err == nil && !won {
		s.dropData(ctx, chains, data)
	}
	return err
}

// dropData deletes the chunks of a data id no file adopted.
func (s *Server) dropData(ctx context.Context, chains []routing.ChainID, data uint64) {
	begin, end := layout.InodeChunks(data)
	seen := map[routing.ChainID]bool{}
	for _, c := range chains {
		if seen[c] {
			continue
		}
		seen[c] = true
		if err := s.chunks.RemoveRange(ctx, c, begin, end); err != nil {
			s.log.Warn("spill: chunks of a spill another one beat could not be deleted", "data", data, "chain", c, "err", err)
		}
	}
}

// chainsOf lists the chains of a layout in the current routing.
func (s *Server) chainsOf(l layout.Layout) ([]routing.ChainID, error) {
	list, ok := s.routing.Current().Table(l.TableID, l.TableVersion)
	if !ok {
		return nil, fmt.Errorf("chain table %d version %d is not in routing", l.TableID, l.TableVersion)
	}
	chains, err := l.Chains(layout.ChainTable{ID: l.TableID, Version: l.TableVersion, Chains: list})
	if err != nil {
		return nil, err
	}
	if len(chains) == 0 {
		return nil, errors.New("the layout has no chains")
	}
	return chains, nil
}
