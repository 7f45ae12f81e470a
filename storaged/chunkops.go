package storaged

import (
	"context"
	"hash/crc32"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

const defaultRangeMax = 1024

// handleRemoveChunks removes up to Max chunks of a range through the chain;
// it must reach the head, and each removal travels the chain like an update.
func (s *Server) handleRemoveChunks(ctx context.Context, req *storageapi.ChunkRange, _ []byte) (*storageapi.RemoveChunksResp, []byte, error) {
	t, _, chain, err := s.route(req.Chain, req.ChainVer)
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkRole(t, chain, false); err != nil {
		return nil, nil, err
	}
	max := int(req.Max)
	if max <= 0 {
		max = defaultRangeMax
	}
	entries, more, err := t.eng.List(uint32(t.chain), req.Begin, req.End, max, false)
	if err != nil {
		return nil, nil, wireError(err)
	}
	resp := &storageapi.RemoveChunksResp{More: more}
	for _, e := range entries {
		rm := &storageapi.WriteReq{Key: storageapi.Key{Chain: req.Chain, ChainVer: req.ChainVer, Chunk: e.Chunk},
			Kind: storageapi.KindRemove, Checksum: crc32.Checksum(nil, castagnoli)}
		if _, _, err := s.updateLocked(ctx, t, rm, nil, nil); err != nil {
			return resp, nil, wireError(err)
		}
		resp.Removed++
	}
	return resp, nil, nil
}

// handleQueryLastChunk describes a range's chunks on this replica: the last
// chunk and its length, and totals (for settling a file's length).
func (s *Server) handleQueryLastChunk(ctx context.Context, req *storageapi.ChunkRange, _ []byte) (*storageapi.QueryLastChunkResp, []byte, error) {
	t, _, _, err := s.route(req.Chain, req.ChainVer)
	if err != nil {
		return nil, nil, err
	}
	resp := &storageapi.QueryLastChunkResp{}
	last, _, err := t.eng.List(uint32(t.chain), req.Begin, req.End, 1, true)
	if err != nil {
		return nil, nil, wireError(err)
	}
	if len(last) == 0 {
		return resp, nil, nil
	}
	resp.Found, resp.LastChunk, resp.LastLen = true, last[0].Chunk, last[0].Meta.Len
	max := int(req.Max)
	if max <= 0 {
		max = 1 << 20
	}
	begin := req.Begin
	for int(resp.Count) < max {
		page, more, err := t.eng.List(uint32(t.chain), begin, req.End, min(defaultRangeMax, max-int(resp.Count)), false)
		if err != nil {
			return nil, nil, wireError(err)
		}
		for _, e := range page {
			resp.Count++
			resp.TotalLen += uint64(e.Meta.Len)
		}
		if !more || len(page) == 0 {
			return resp, nil, nil
		}
		begin = page[len(page)-1].Chunk.Next()
	}
	resp.More = true
	return resp, nil, nil
}

// handleDumpChunkMeta lists a page of this replica's chunk metadata for a chain.
func (s *Server) handleDumpChunkMeta(ctx context.Context, req *storageapi.ChunkRange, _ []byte) (*storageapi.DumpChunkMetaResp, []byte, error) {
	t := s.target(routing.ChainID(req.Chain))
	if t == nil {
		return nil, nil, rpc.Errorf(storageapi.CodeNoTarget, "node %d has no target of chain %d", s.cfg.Node, req.Chain)
	}
	max := int(req.Max)
	if max <= 0 {
		max = defaultRangeMax
	}
	end := req.End
	if end == (layout.ChunkID{}) {
		for i := range end {
			end[i] = 0xff
		}
	}
	entries, more, err := t.eng.List(uint32(t.chain), req.Begin, end, max, false)
	if err != nil {
		return nil, nil, wireError(err)
	}
	resp := &storageapi.DumpChunkMetaResp{More: more, Metas: make([]storageapi.ChunkMeta, len(entries))}
	for i, e := range entries {
		resp.Metas[i] = toWireMeta(e.Chunk, e.Meta)
	}
	return resp, nil, nil
}
