package storaged

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/storaged/craq"
	"github.com/flyfs/flyfs/storaged/engine"
)

// maxBatchReadBytes bounds one batch read's response payload.
const maxBatchReadBytes = 64 << 20

// handleBatchRead serves many chunk ranges in one call; each IO has its own
// result, and the data of all of them travels in one payload.
func (s *Server) handleBatchRead(ctx context.Context, req *storageapi.BatchReadReq, _ []byte) (*storageapi.BatchReadResp, []byte, error) {
	var total uint64
	for _, io := range req.IOs {
		total += uint64(io.Length)
	}
	if total > maxBatchReadBytes {
		return nil, nil, rpc.Errorf(rpc.ResourceExhausted, "batch read of %d bytes exceeds %d", total, maxBatchReadBytes)
	}
	resp := &storageapi.BatchReadResp{Results: make([]storageapi.ReadResult, len(req.IOs))}
	// Pooled (back to the pool once sent: PooledResponse), or an in-process
	// caller's own memory (rpc.ReplyInto).
	out := rpc.ReplyBuffer(ctx, int(total))[:0]
	for i, rio := range req.IOs {
		start := time.Now()
		n, commit, err := s.readOne(rio, req.Relaxed, req.NoCache, out[len(out):len(out)+int(rio.Length)])
		if s.metrics != nil {
			if t := s.target(routing.ChainID(rio.Key.Chain)); t != nil {
				s.metrics.read(t.id, n, time.Since(start), err)
			}
		}
		if err != nil {
			code := rpc.CodeOf(wireError(err))
			resp.Results[i] = storageapi.ReadResult{Code: code, Message: err.Error()}
			continue
		}
		out = out[:len(out)+n]
		resp.Results[i] = storageapi.ReadResult{Len: uint32(n), CommitVer: commit}
		s.io.readOps.Add(1)
		s.io.readLat.add(time.Since(start))
	}
	s.io.readBytes.Add(uint64(len(out)))
	return resp, out, nil
}

// readOne reads one range into buf; short at the chunk's end. noCache: past
// the page cache where it can.
func (s *Server) readOne(rio storageapi.ReadIO, relaxed, noCache bool, buf []byte) (int, uint32, error) {
	t, _, chain, err := s.route(rio.Key.Chain, rio.Key.ChainVer)
	if err != nil {
		return 0, 0, err
	}
	if i := chain.Index(t.id); i < 0 || chain.Targets[i].Public != routing.Serving || t.state.get() != routing.UpToDate {
		return 0, 0, rpc.Errorf(storageapi.CodeTargetNotServing, "target %d of chain %d does not serve reads now", t.id, t.chain)
	}
	if uint64(rio.Offset)+uint64(rio.Length) > 1<<32 {
		return 0, 0, rpc.Errorf(rpc.OutOfRange, "read of %d at %d", rio.Length, rio.Offset)
	}
	if len(rio.Base) > layout.MaxLayers {
		return 0, 0, rpc.Errorf(rpc.InvalidArgument, "read of chunk %v through %d layers (at most %d)", rio.Key.Chunk, len(rio.Base), layout.MaxLayers)
	}
	// The handle pins the version it was taken at: copy-on-write keeps that
	// block intact until Release, so data and versions below always agree.
	chunk := rio.Key.Chunk
	h, err := t.eng.Get(t.key(chunk))
	visible := uint32(1<<32 - 1)
	for _, b := range rio.Base {
		if !errors.Is(err, engine.ErrNotFound) {
			break
		}
		// The file does not own the chunk yet: its bytes are a layer's.
		chunk, visible = b.Chunk, b.Len
		h, err = t.eng.Get(t.key(chunk))
	}
	if errors.Is(err, engine.ErrNotFound) {
		return 0, 0, rpc.Errorf(rpc.NotFound, "chunk %v not on chain %d", rio.Key.Chunk, t.chain)
	}
	if err != nil {
		return 0, 0, err
	}
	defer h.Release()
	m := h.Meta()
	m.Len = min(m.Len, visible)
	switch craq.Read(craq.Local{Exists: true, CommitVer: m.CommitVer, UpdateVer: m.UpdateVer}, relaxed) {
	case craq.ReadNotCommitted:
		return 0, 0, rpc.Errorf(storageapi.CodeNotCommitted, "chunk %v has pending version %d over %d", chunk, m.UpdateVer, m.CommitVer)
	}
	if rio.Offset >= m.Len {
		return 0, m.CommitVer, nil
	}
	read := h.ReadAt
	if noCache {
		read = h.ReadAtUncached
	}
	n, err := read(buf[:min(uint32(len(buf)), m.Len-rio.Offset)], int64(rio.Offset))
	if err != nil && !errors.Is(err, io.EOF) {
		s.noteCorrupt(t, chunk, err) // the client reads another replica; this one gets repaired
		return 0, 0, err
	}
	return n, m.CommitVer, nil
}
