package client

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/durability"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrChunkNotFound is returned by reads of a chunk no replica has; callers
// reading a file treat it as a hole.
var ErrChunkNotFound = errors.New("client: chunk not found")

// ChunkIO moves chunk data: updates go to a chain's head (through another
// replica of the chain when the head does not answer, relay.go), tagged for
// deduplication and retried through routing changes; reads go to any serving
// replica, spread round-robin, hedged to a second replica when the first is
// slow, and retried on another replica when one cannot serve. Every request's
// latency feeds the in-flight window the file layer sends pieces under.
type ChunkIO struct {
	routing  routing.Source
	storage  storageapi.Client
	clientID uint64
	retryFor time.Duration

	mu       sync.Mutex
	channels []*channel // free channels
	nextChan uint32
	rr       atomic.Uint64

	window atomic.Pointer[Window]
	hedge  atomic.Pointer[hedger]

	suspects suspects // storage nodes this client recently failed to reach
	unsynced unsynced // chains with relaxed updates (durability.go)

	retries      atomic.Uint64 // attempts repeated after a retryable error
	relayed      atomic.Uint64 // updates that entered their chain through a relay
	unanswered   atomic.Uint64 // write attempts a probe ended (relay.go)
	notCommitted atomic.Uint64 // reads that found the chunk mid-update
	batchRPCs    atomic.Uint64 // batch-read RPCs carrying more than one IO
	batchedIOs   atomic.Uint64 // IOs those carried
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
	cio := &ChunkIO{routing: src, storage: storageapi.Client{RPC: c}, clientID: rand.Uint64() | 1, retryFor: retryFor}
	cio.unsynced.syncing = make(chan struct{}, 1)
	cio.window.Store(NewWindow(WindowConfig{}))
	cio.hedge.Store(newHedger(HedgeConfig{}))
	return cio
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
	// Base: the layers the file shares this chunk with, while it does not
	// own it (core/layout's shared data).
	Base []layout.LayerChunk
}

// Write writes data at offset of a chunk and returns the chunk's committed
// state once every replica has committed it.
func (c *ChunkIO) Write(ctx context.Context, chain routing.ChainID, chunk layout.ChunkID, offset uint32, data []byte, chunkSize uint32) (storageapi.ChunkMeta, error) {
	return c.Update(ctx, Update{Chain: chain, Chunk: chunk, Kind: storageapi.KindWrite, Offset: offset, Data: data, ChunkSize: chunkSize})
}

// Update sends an update to the chain's head and retries it, with the same
// tag, through stale routing, head changes and unreachable nodes.
func (c *ChunkIO) Update(ctx context.Context, u Update) (storageapi.ChunkMeta, error) {
	c.noteUpdate(ctx, u.Chain)
	ch := c.acquire()
	defer c.release(ch)
	ch.seq++
	req := &storageapi.WriteReq{Kind: u.Kind, Offset: u.Offset, Length: u.Length, ChunkSize: u.ChunkSize,
		Checksum: crc32.Checksum(u.Data, castagnoli), Tag: storageapi.Tag{Client: c.clientID, Channel: ch.id, Seq: ch.seq}, Base: u.Base,
		NoCache: isNoCache(ctx), Staged: isStaged(ctx)}
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
		start := time.Now()
		node, relay := writeEntry(chain, head, func(n routing.NodeID) bool { return c.suspects.suspect(n, start) })
		addr, _ := info.Addr(node)
		req.Key = storageapi.Key{Chain: uint32(u.Chain), ChainVer: chain.Version, Chunk: u.Chunk}
		req.Relay = relay
		actx, cancel := context.WithTimeout(ctx, AttemptTimeout)
		stop := c.abortIfHeadMoves(u.Chain, head.ID, cancel)
		stopProbe := c.probeIfSilent(addr, len(u.Data), cancel)
		resp, err := c.storage.Write(actx, addr, req, u.Data)
		moved := stop()
		unanswered := stopProbe()
		cancel()
		switch {
		case err != nil && moved && ctx.Err() == nil:
			err = rpc.Errorf(rpc.Unavailable, "chain %d's head moved off %s during the write", u.Chain, addr)
		case err != nil && unanswered && ctx.Err() == nil:
			c.unanswered.Add(1)
			err = rpc.Errorf(rpc.Unavailable, "storage %s answered neither the write nor a probe within %v", addr, probeDelay(len(u.Data))+probeTimeout)
		}
		err = attemptErr(ctx, actx, err, addr)
		if rpc.CodeOf(err) == rpc.Unavailable && !moved && ctx.Err() == nil {
			switch {
			case !rpc.FromPeer(err):
				c.suspects.mark(node, time.Now()) // it did not answer: try another way in
			case relay:
				c.suspects.clear(head.Node) // the relay could not reach the head either
			}
		}
		if relay && err == nil {
			c.relayed.Add(1)
		}
		c.Window().Observe(time.Since(start), requestClass(true, len(u.Data)), outcomeOf(err, ctx.Err()))
		if err == nil {
			meta = resp.Meta
		}
		return err
	})
	if rpc.CodeOf(err) == storageapi.CodeNoSpace {
		err = fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	return meta, err
}

// RemoveRange removes the chunks [begin, end) of one chain through its head,
// page by page, retrying through routing changes.
func (c *ChunkIO) RemoveRange(ctx context.Context, chain routing.ChainID, begin, end layout.ChunkID) error {
	for {
		more := false
		err := c.retry(ctx, func(info *routing.Info) error {
			ch, ok := info.Chain(chain)
			if !ok {
				return rpc.Errorf(storageapi.CodeNoTarget, "chain %d not in routing", chain)
			}
			head, ok := ch.Head()
			if !ok {
				return rpc.Errorf(rpc.Unavailable, "chain %d has no serving target", chain)
			}
			addr, _ := info.Addr(head.Node)
			resp, err := c.storage.RemoveChunks(ctx, addr, &storageapi.ChunkRange{Chain: uint32(chain), ChainVer: ch.Version, Begin: begin, End: end, Max: 256})
			if err == nil {
				more = resp.More
			}
			return err
		})
		if err != nil || !more {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// Window is the in-flight window the file layer sends chunk pieces under.
func (c *ChunkIO) Window() *Window { return c.window.Load() }

// SetWindow replaces the window (nil: a default adaptive one); a
// WindowConfig{Fixed: true, Start: 8} window is the old fixed behaviour.
func (c *ChunkIO) SetWindow(w *Window) {
	if w == nil {
		w = NewWindow(WindowConfig{})
	}
	c.window.Store(w)
}

// SetHedging replaces the hedging policy (its learnt latencies start over).
func (c *ChunkIO) SetHedging(cfg HedgeConfig) { c.hedge.Store(newHedger(cfg)) }

// ReadIO is one range to read; Base lists the layer chunks that hold its
// bytes while the file does not own the chunk.
type ReadIO struct {
	Chain  routing.ChainID
	Chunk  layout.ChunkID
	Offset uint32
	Length uint32
	Base   []layout.LayerChunk
}

// ReadResult is one IO's outcome in a BatchRead.
type ReadResult struct {
	Data []byte
	Err  error // ErrChunkNotFound for a missing chunk
}

// plannedIO is a read with the replicas that may serve it and the one picked.
type plannedIO struct {
	wire     storageapi.ReadIO
	replicas []routing.Target
	pick     int
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
		p := plannedIO{replicas: replicas, pick: int(c.rr.Add(1) % uint64(len(replicas))),
			wire: storageapi.ReadIO{Key: storageapi.Key{Chain: uint32(io.Chain), ChainVer: chain.Version, Chunk: io.Chunk}, Offset: io.Offset, Length: io.Length, Base: io.Base}}
		res, err := c.readGroup(ctx, info, []plannedIO{p}, relaxed)
		if err != nil {
			return err
		}
		if res[0].Err != nil {
			return res[0].Err
		}
		out = res[0].Data
		return nil
	})
	if rpc.CodeOf(err) == rpc.NotFound {
		return nil, ErrChunkNotFound
	}
	return out, err
}

// readGroup reads IOs whose picked replicas are all on one node in one RPC,
// hedged: if that node is slow to answer, the IOs go to other replicas.
func (c *ChunkIO) readGroup(ctx context.Context, info *routing.Info, ios []plannedIO, relaxed bool) ([]ReadResult, error) {
	node := ios[0].replicas[ios[0].pick].Node
	wire := make([]storageapi.ReadIO, len(ios))
	total := 0
	for i, p := range ios {
		wire[i] = p.wire
		total += int(p.wire.Length)
	}
	primary := func(ctx context.Context) ([]ReadResult, error) { return c.rpcRead(ctx, info, node, wire, relaxed) }
	return c.hedge.Load().race(ctx, requestClass(false, total), primary, c.backupFor(info, node, ios, relaxed))
}

// backupFor plans the same IOs on replicas off node (one RPC per node they
// land on), or returns nil when some IO has no other replica.
func (c *ChunkIO) backupFor(info *routing.Info, node routing.NodeID, ios []plannedIO, relaxed bool) func(context.Context) ([]ReadResult, error) {
	var nodes []routing.NodeID
	byNode := map[routing.NodeID][]int{}
	for i, p := range ios {
		alt := routing.NodeID(0)
		for j := 1; j < len(p.replicas); j++ {
			if t := p.replicas[(p.pick+j)%len(p.replicas)]; t.Node != node {
				alt = t.Node
				break
			}
		}
		if alt == 0 {
			return nil
		}
		if _, ok := byNode[alt]; !ok {
			nodes = append(nodes, alt)
		}
		byNode[alt] = append(byNode[alt], i)
	}
	return func(ctx context.Context) ([]ReadResult, error) {
		out := make([]ReadResult, len(ios))
		errs := make([]error, len(nodes))
		var wg sync.WaitGroup
		for k, n := range nodes {
			wg.Add(1)
			go func(k int, n routing.NodeID, idx []int) {
				defer wg.Done()
				wire := make([]storageapi.ReadIO, len(idx))
				for j, i := range idx {
					wire[j] = ios[i].wire
				}
				res, err := c.rpcRead(ctx, info, n, wire, relaxed)
				if err != nil {
					errs[k] = err
					return
				}
				for j, i := range idx {
					out[i] = res[j]
				}
			}(k, n, byNode[n])
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			for _, e := range errs {
				if e != nil {
					return nil, e // one of them, with its code, for retryable()
				}
			}
		}
		return out, nil
	}
}

// rpcRead is one BatchRead RPC to a node; per-IO failures are in the
// results, a failed call in the error.
func (c *ChunkIO) rpcRead(ctx context.Context, info *routing.Info, node routing.NodeID, wire []storageapi.ReadIO, relaxed bool) ([]ReadResult, error) {
	addr, ok := info.Addr(node)
	if !ok {
		return nil, rpc.Errorf(storageapi.CodeNoTarget, "node %d not in routing", node)
	}
	total := 0
	for _, w := range wire {
		total += int(w.Length)
	}
	start := time.Now()
	actx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	resp, data, err := c.storage.BatchRead(actx, addr, &storageapi.BatchReadReq{Relaxed: relaxed, IOs: wire, NoCache: isNoCache(ctx)})
	cancel()
	err = attemptErr(ctx, actx, err, addr)
	c.Window().Observe(time.Since(start), requestClass(false, total), outcomeOf(err, ctx.Err()))
	if err != nil {
		return nil, err
	}
	if len(resp.Results) != len(wire) {
		return nil, rpc.Errorf(rpc.Internal, "batch read answered %d results for %d", len(resp.Results), len(wire))
	}
	if len(wire) > 1 {
		c.batchRPCs.Add(1)
		c.batchedIOs.Add(uint64(len(wire)))
	}
	out := make([]ReadResult, len(wire))
	off := 0
	for j, r := range resp.Results {
		if err := r.Err(); err != nil {
			switch rpc.CodeOf(err) {
			case rpc.NotFound:
				err = ErrChunkNotFound
			case storageapi.CodeNotCommitted:
				c.notCommitted.Add(1)
			}
			out[j].Err = err
			continue
		}
		if off+int(r.Len) > len(data) || r.Len > wire[j].Length {
			return nil, rpc.Errorf(rpc.Internal, "batch read payload too short")
		}
		out[j].Data = data[off : off+int(r.Len) : off+int(r.Len)]
		off += int(r.Len)
	}
	return out, nil
}

// abortIfHeadMoves cancels a write attempt when routing names another head
// for chain (the one written to was declared failed: a host cut off does
// not reset its connections, so the attempt would otherwise wait out
// AttemptTimeout). stop ends the watch and reports whether it cancelled.
func (c *ChunkIO) abortIfHeadMoves(chain routing.ChainID, head routing.TargetID, cancel context.CancelFunc) (stop func() bool) {
	done := make(chan struct{})
	var moved atomic.Bool
	changed := c.routing.Changed()
	go func() {
		for {
			select {
			case <-done:
				return
			case <-changed:
				changed = c.routing.Changed()
				if ch, ok := c.routing.Current().Chain(chain); ok {
					if h, ok := ch.Head(); ok && h.ID == head {
						continue
					}
				}
				moved.Store(true)
				cancel()
				return
			}
		}
	}()
	return func() bool { close(done); return moved.Load() }
}

// AttemptTimeout bounds one chunk RPC. A node that stops answering (frozen,
// cut off) without closing its connections would otherwise hold the call
// forever; past this the attempt counts as Unavailable and is retried with
// fresh routing, which by then names another head or replica.
var AttemptTimeout = 10 * time.Second

// attemptErr turns an attempt's own timeout (the caller's context still
// live) into a retryable Unavailable.
func attemptErr(ctx, actx context.Context, err error, addr string) error {
	// (actx is cancelled by then; only a deadline that fired first counts)
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return rpc.Errorf(rpc.Unavailable, "storage %s did not answer within %v", addr, AttemptTimeout)
	}
	return err
}

// retryable codes: routing moved, a node is down, or the chunk is mid-update.
// DataLoss (a replica's checksum failed) is retried too: another replica, or
// the same one after repair, has the data. So are a failed disk's answers
// (DiskError, ReadOnly): its targets leave their chains within a heartbeat,
// and the retry goes to the replicas that remain.
func retryable(err error) bool {
	switch rpc.CodeOf(err) {
	case storageapi.CodeChainVersion, storageapi.CodeNotHead, storageapi.CodeNoTarget, storageapi.CodeTargetNotServing,
		storageapi.CodeNotCommitted, storageapi.CodeChannelBusy, rpc.Unavailable, rpc.DataLoss,
		storageapi.CodeDiskError, storageapi.CodeReadOnly:
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
		c.retries.Add(1)
		code := rpc.CodeOf(err)
		if code == storageapi.CodeChainVersion || code == storageapi.CodeNotHead {
			if _, rerr := c.routing.Refresh(ctx, info.Version); rerr != nil {
				return errors.Join(err, rerr)
			}
		}
		wait := backoff
		if code == storageapi.CodeNotCommitted {
			// The update in the way finishes within a chain round trip:
			// retry soon, without growing the pause.
			wait = time.Millisecond
		} else {
			backoff = min(backoff*2, 500*time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return err
		case <-c.routing.Changed():
		case <-time.After(wait):
		}
	}
}

// maxBatchBytes bounds one batch RPC's data (storaged refuses above 64 MiB).
const maxBatchBytes = 16 << 20

// BatchRead reads many ranges: the IOs of one chain go to one of its serving
// replicas (spread round-robin), and all IOs landing on one storage node
// travel in one RPC (hedged like Read). IOs that fail with a retryable error
// are retried, one by one, through Read.
func (c *ChunkIO) BatchRead(ctx context.Context, ios []ReadIO, relaxed bool) []ReadResult {
	out := make([]ReadResult, len(ios))
	info := c.routing.Current()
	type chainPlan struct {
		replicas []routing.Target
		pick     int
		ver      uint32
		err      error
	}
	chains := map[routing.ChainID]*chainPlan{}
	var groups [][]int
	groupOf := map[routing.NodeID]int{}
	groupBytes := map[routing.NodeID]int{}
	planned := make([]plannedIO, len(ios))
	for i, io := range ios {
		cp, ok := chains[io.Chain]
		if !ok {
			cp = &chainPlan{}
			if chain, ok := info.Chain(io.Chain); !ok {
				cp.err = rpc.Errorf(storageapi.CodeNoTarget, "chain %d not in routing", io.Chain)
			} else if cp.replicas, cp.ver = chain.Readable(), chain.Version; len(cp.replicas) == 0 {
				cp.err = rpc.Errorf(rpc.Unavailable, "chain %d has no serving target", io.Chain)
			} else {
				cp.pick = int(c.rr.Add(1) % uint64(len(cp.replicas)))
			}
			chains[io.Chain] = cp
		}
		if cp.err != nil {
			out[i].Err = cp.err
			continue
		}
		planned[i] = plannedIO{replicas: cp.replicas, pick: cp.pick,
			wire: storageapi.ReadIO{Key: storageapi.Key{Chain: uint32(io.Chain), ChainVer: cp.ver, Chunk: io.Chunk}, Offset: io.Offset, Length: io.Length, Base: io.Base}}
		node := cp.replicas[cp.pick].Node
		g, ok := groupOf[node]
		if !ok || groupBytes[node]+int(io.Length) > maxBatchBytes {
			g = len(groups)
			groups = append(groups, nil)
			groupOf[node], groupBytes[node] = g, 0
		}
		groups[g] = append(groups[g], i)
		groupBytes[node] += int(io.Length)
	}
	run := func(idx []int) {
		group := make([]plannedIO, len(idx))
		for j, i := range idx {
			group[j] = planned[i]
		}
		res, err := c.readGroup(ctx, info, group, relaxed)
		for j, i := range idx {
			if err != nil {
				out[i].Err = err
			} else {
				out[i] = res[j]
			}
		}
	}
	if len(groups) == 1 {
		run(groups[0])
	} else {
		var wg sync.WaitGroup
		for _, idx := range groups {
			wg.Add(1)
			go func(idx []int) {
				defer wg.Done()
				run(idx)
			}(idx)
		}
		wg.Wait()
	}
	// Retry what failed retryably, one by one with fresh routing.
	var wg sync.WaitGroup
	for i := range out {
		if out[i].Err != nil && retryable(out[i].Err) && ctx.Err() == nil {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				out[i].Data, out[i].Err = c.Read(ctx, ios[i], relaxed)
			}(i)
		}
	}
	wg.Wait()
	return out
}

type noCacheKey struct{}

// NoCache marks the chunk writes and reads made under ctx as ones whose data
// need not stay in the storage nodes' page cache (storageapi.WriteReq and
// BatchReadReq.NoCache): a large object written once and seldom read back
// at once, or read whole, for which filling the cache costs more than going
// to the disk directly.
func NoCache(ctx context.Context) context.Context {
	return context.WithValue(ctx, noCacheKey{}, true)
}

func isNoCache(ctx context.Context) bool {
	v, _ := ctx.Value(noCacheKey{}).(bool)
	return v
}

type stagedKey struct{}

// Staged marks the relaxed chunk writes made under ctx as ones nothing
// refers to until the caller's SyncData returns (storageapi.WriteReq's
// Staged): the storage nodes sync their content at that sync, not each
// before its record. The caller must not publish the chunks before
// SyncData succeeds, and must give them up if it fails.
func Staged(ctx context.Context) context.Context {
	return context.WithValue(ctx, stagedKey{}, true)
}

func isStaged(ctx context.Context) bool {
	v, _ := ctx.Value(stagedKey{}).(bool)
	return v && durability.IsRelaxed(ctx)
}
