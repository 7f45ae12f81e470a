// Package client is the one client library every flyfs front end uses.
package client

import (
	"context"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrChunkNotFound is returned by reads of a chunk no replica has; callers
// reading a file treat it as a hole.
var ErrChunkNotFound = errors.New("client: chunk not found")

// ChunkIO moves chunk data: updates go to a chain's head, tagged for
// deduplication and retried through routing changes; reads go to any serving
// replica, spread round-robin, retried on another replica when one cannot
// serve.
type ChunkIO struct {
	routing  routing.Source
	storage  storageapi.Client
	clientID uint64
	retryFor time.Duration

	mu       sync.Mutex
	channels []*channel // free channels
	nextChan uint32
	rr       atomic.Uint64
}

type channel struct {
	id  uint32
	seq uint64
}

// NewChunkIO returns a ChunkIO over the routing source and an rpc client.
// retryFor bounds how long one call keeps retrying (default 30 s).
func NewChunkIO(src routing.Source, c *rpc.Client, retryFor time.Duration) *ChunkIO {
	if retryFor <= 0 {
		retryFor = 30 * time.Second
	}
	return &ChunkIO{routing: src, storage: storageapi.Client{RPC: c}, clientID: rand.Uint64() | 1, retryFor: retryFor}
}

// acquire takes a channel; an update keeps it (and its sequence number) for
// all of its retries, so the head can recognise a retry.
func (c *ChunkIO) acquire() *channel {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.channels); n > 0 {
		ch := c.channels[n-1]
		c.channels = c.channels[:n-1]
		return ch
	}
	c.nextChan++
	return &channel{id: c.nextChan}
}

func (c *ChunkIO) release(ch *channel) {
	c.mu.Lock()
	c.channels = append(c.channels, ch)
	c.mu.Unlock()
}

// Update describes one update of a chunk.
type Update struct {
	Chain     routing.ChainID
	Chunk     layout.ChunkID
	Kind      storageapi.Kind
	Offset    uint32
	Data      []byte
	Length    uint32 // KindTruncate
	ChunkSize uint32
}

// Write writes data at offset of a chunk and returns the chunk's committed
// state once every replica has committed it.
func (c *ChunkIO) Write(ctx context.Context, chain routing.ChainID, chunk layout.ChunkID, offset uint32, data []byte, chunkSize uint32) (storageapi.ChunkMeta, error) {
	return c.Update(ctx, Update{Chain: chain, Chunk: chunk, Kind: storageapi.KindWrite, Offset: offset, Data: data, ChunkSize: chunkSize})
}

// Update sends an update to the chain's head and retries it, with the same
// tag, through stale routing, head changes and unreachable nodes.
func (c *ChunkIO) Update(ctx context.Context, u Update) (storageapi.ChunkMeta, error) {
	ch := c.acquire()
	defer c.release(ch)
	ch.seq++
	req := &storageapi.WriteReq{Kind: u.Kind, Offset: u.Offset, Length: u.Length, ChunkSize: u.ChunkSize,
		Checksum: crc32.Checksum(u.Data, castagnoli), Tag: storageapi.Tag{Client: c.clientID, Channel: ch.id, Seq: ch.seq}}
	var meta storageapi.ChunkMeta
	err := c.retry(ctx, func(info *routing.Info) error {
		chain, ok := info.Chain(u.Chain)
		if !ok {
			return rpc.Errorf(storageapi.CodeNoTarget, "chain %d not in routing", u.Chain)
		}
		head, ok := chain.Head()
		if !ok {
			return rpc.Errorf(rpc.Unavailable, "chain %d has no serving target", u.Chain)
		}
		addr, _ := info.Addr(head.Node)
		req.Key = storageapi.Key{Chain: uint32(u.Chain), ChainVer: chain.Version, Chunk: u.Chunk}
		resp, err := c.storage.Write(ctx, addr, req, u.Data)
		if err == nil {
			meta = resp.Meta
		}
		return err
	})
	return meta, err
}

// ReadIO is one range to read.
type ReadIO struct {
	Chain  routing.ChainID
	Chunk  layout.ChunkID
	Offset uint32
	Length uint32
}

// Read reads one range of a chunk from a serving replica; the result is short
// at the chunk's end. Relaxed accepts a pending version.
func (c *ChunkIO) Read(ctx context.Context, io ReadIO, relaxed bool) ([]byte, error) {
	var out []byte
	err := c.retry(ctx, func(info *routing.Info) error {
		chain, ok := info.Chain(io.Chain)
		if !ok {
			return rpc.Errorf(storageapi.CodeNoTarget, "chain %d not in routing", io.Chain)
		}
		replicas := chain.Readable()
		if len(replicas) == 0 {
			return rpc.Errorf(rpc.Unavailable, "chain %d has no serving target", io.Chain)
		}
		t := replicas[c.rr.Add(1)%uint64(len(replicas))]
		addr, _ := info.Addr(t.Node)
		resp, data, err := c.storage.BatchRead(ctx, addr, &storageapi.BatchReadReq{Relaxed: relaxed,
			IOs: []storageapi.ReadIO{{Key: storageapi.Key{Chain: uint32(io.Chain), ChainVer: chain.Version, Chunk: io.Chunk}, Offset: io.Offset, Length: io.Length}}})
		if err != nil {
			return err
		}
		if len(resp.Results) != 1 {
			return rpc.Errorf(rpc.Internal, "batch read answered %d results for 1", len(resp.Results))
		}
		if err := resp.Results[0].Err(); err != nil {
			return err
		}
		out = data[:resp.Results[0].Len]
		return nil
	})
	if rpc.CodeOf(err) == rpc.NotFound {
		return nil, ErrChunkNotFound
	}
	return out, err
}

// retryable codes: routing moved, a node is down, or the chunk is mid-update.
func retryable(err error) bool {
	switch rpc.CodeOf(err) {
	case storageapi.CodeChainVersion, storageapi.CodeNotHead, storageapi.CodeNoTarget, storageapi.CodeTargetNotServing,
		storageapi.CodeNotCommitted, storageapi.CodeChannelBusy, rpc.Unavailable:
		return true
	}
	return false
}

// retry runs op with the newest routing until it succeeds, fails for good, or
// retryFor passes.
func (c *ChunkIO) retry(ctx context.Context, op func(*routing.Info) error) error {
	deadline := time.Now().Add(c.retryFor)
	backoff := 5 * time.Millisecond
	for {
		info := c.routing.Current()
		err := op(info)
		if err == nil || !retryable(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		if code := rpc.CodeOf(err); code == storageapi.CodeChainVersion || code == storageapi.CodeNotHead {
			if _, rerr := c.routing.Refresh(ctx, info.Version); rerr != nil {
				return errors.Join(err, rerr)
			}
		}
		select {
		case <-ctx.Done():
			return err
		case <-c.routing.Changed():
		case <-time.After(backoff):
			backoff = min(backoff*2, 500*time.Millisecond)
		}
	}
}

// ReadResult is one IO's outcome in a BatchRead.
type ReadResult struct {
	Data []byte
	Err  error // ErrChunkNotFound for a missing chunk
}

// BatchRead reads many ranges, one RPC per chain (to one of its serving
// replicas, spread round-robin). IOs that fail with a retryable error are
// retried, one by one, through Read.
func (c *ChunkIO) BatchRead(ctx context.Context, ios []ReadIO, relaxed bool) []ReadResult {
	out := make([]ReadResult, len(ios))
	byChain := map[routing.ChainID][]int{}
	for i, io := range ios {
		byChain[io.Chain] = append(byChain[io.Chain], i)
	}
	info := c.routing.Current()
	var wg sync.WaitGroup
	for chainID, idx := range byChain {
		wg.Add(1)
		go func(chainID routing.ChainID, idx []int) {
			defer wg.Done()
			err := c.batchOnce(ctx, info, chainID, idx, ios, out, relaxed)
			for _, i := range idx {
				if err != nil {
					out[i].Err = err
				}
				if out[i].Err != nil && retryable(out[i].Err) {
					out[i].Data, out[i].Err = c.Read(ctx, ios[i], relaxed)
				}
			}
		}(chainID, idx)
	}
	wg.Wait()
	return out
}

func (c *ChunkIO) batchOnce(ctx context.Context, info *routing.Info, chainID routing.ChainID, idx []int, ios []ReadIO, out []ReadResult, relaxed bool) error {
	chain, ok := info.Chain(chainID)
	if !ok {
		return rpc.Errorf(storageapi.CodeNoTarget, "chain %d not in routing", chainID)
	}
	replicas := chain.Readable()
	if len(replicas) == 0 {
		return rpc.Errorf(rpc.Unavailable, "chain %d has no serving target", chainID)
	}
	t := replicas[c.rr.Add(1)%uint64(len(replicas))]
	addr, _ := info.Addr(t.Node)
	req := &storageapi.BatchReadReq{Relaxed: relaxed, IOs: make([]storageapi.ReadIO, len(idx))}
	for j, i := range idx {
		req.IOs[j] = storageapi.ReadIO{Key: storageapi.Key{Chain: uint32(chainID), ChainVer: chain.Version, Chunk: ios[i].Chunk},
			Offset: ios[i].Offset, Length: ios[i].Length}
	}
	resp, data, err := c.storage.BatchRead(ctx, addr, req)
	if err != nil {
		return err
	}
	if len(resp.Results) != len(idx) {
		return rpc.Errorf(rpc.Internal, "batch read answered %d results for %d", len(resp.Results), len(idx))
	}
	off := 0
	for j, i := range idx {
		r := resp.Results[j]
		if err := r.Err(); err != nil {
			if rpc.CodeOf(err) == rpc.NotFound {
				err = ErrChunkNotFound
			}
			out[i].Err = err
			continue
		}
		if off+int(r.Len) > len(data) {
			return rpc.Errorf(rpc.Internal, "batch read payload too short")
		}
		out[i].Data = data[off : off+int(r.Len) : off+int(r.Len)]
		off += int(r.Len)
	}
	return nil
}
