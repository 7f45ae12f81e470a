package storaged

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/storaged/engine"
)

// Repair of corrupt replicas.
//
// A replica whose chunk data rots on disk (its bytes no longer match the
// segment CRCs the engine recorded) refuses to serve it (DataLoss), and the
// client reads another replica. Recovery does not notice: the chunk's
// metadata, versions and expected checksum are intact, so SyncDecision sees
// nothing to send. So whoever hits the mismatch here (a read, a resync send,
// a forward, an update, the scrubber) schedules a repair: fetch the chunk
// whole from another serving replica of the chain, check the bytes against
// this replica's own expected checksum (the metadata's Meta.Checksum), and
// rewrite the local copy with the same versions through the resync path. A
// copy that does not match is never taken, and a corrupt peer refuses to
// serve its copy in the first place.
//
// Repairs of one chunk are deduplicated, a few run at a time, and a failed
// one (no replica had a good copy, or none answered) is retried with backoff
// for as long as the chunk stays corrupt, logged at error level each time and
// counted in the Stats answer.

const (
	defaultRepairWorkers = 2
	maxQueuedRepairs     = 4096 // chunks known corrupt and waiting; more are dropped (found again later)
	repairFirstBackoff   = 200 * time.Millisecond
	repairMaxBackoff     = time.Minute
	repairFetchTimeout   = 30 * time.Second
)

type repairer struct {
	mu      sync.Mutex
	pending map[engine.Key]*repairJob // queued, running, or waiting to retry
	queue   chan *repairJob           // capacity maxQueuedRepairs: a send never blocks
	wg      sync.WaitGroup
	ctx     context.Context
	disks   []repairCounters
	dropped atomic.Uint64
}

// repairCounters are one disk's repair figures.
type repairCounters struct {
	repaired atomic.Uint64
	failures atomic.Uint64
}

type repairJob struct {
	t       *target
	chunk   layout.ChunkID
	tries   int
	backoff time.Duration
}

// startRepairs starts the repair workers; they stop when ctx ends.
func (s *Server) startRepairs(ctx context.Context) {
	n := s.cfg.RepairWorkers
	if n <= 0 {
		n = defaultRepairWorkers
	}
	r := &s.repair
	r.pending = map[engine.Key]*repairJob{}
	r.queue = make(chan *repairJob, maxQueuedRepairs)
	r.ctx = ctx
	r.disks = make([]repairCounters, len(s.engines))
	for range n {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-r.queue:
					s.runRepair(j)
				}
			}
		}()
	}
}

// noteCorrupt schedules a repair of chunk on t if err says its local copy
// failed its checksum. Other errors (and a corrupt metadata record, which
// leaves no expected checksum to repair against) are left alone.
func (s *Server) noteCorrupt(t *target, chunk layout.ChunkID, err error) {
	if err == nil || !errors.Is(err, engine.ErrChecksum) {
		return
	}
	if _, gerr := t.eng.GetMeta(t.key(chunk)); gerr != nil {
		return // no record (or a corrupt one): nothing to check a copy against
	}
	s.scheduleRepair(t, chunk)
}

// scheduleRepair queues a repair of one chunk unless one is pending already.
func (s *Server) scheduleRepair(t *target, chunk layout.ChunkID) {
	r := &s.repair
	k := t.key(chunk)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.queue == nil || r.ctx.Err() != nil {
		return
	}
	if _, ok := r.pending[k]; ok {
		return
	}
	if len(r.pending) >= maxQueuedRepairs {
		if r.dropped.Add(1)%1000 == 1 {
			s.log.Error("too many corrupt chunks waiting for repair: dropping some (found again on their next read or scrub)",
				"chain", t.chain, "chunk", chunk, "waiting", len(r.pending))
		}
		return
	}
	j := &repairJob{t: t, chunk: chunk, backoff: repairFirstBackoff}
	r.pending[k] = j
	r.queue <- j
}

// runRepair makes one attempt and then drops the job or retries it later.
func (s *Server) runRepair(j *repairJob) {
	r := &s.repair
	done, err := s.repairOnce(r.ctx, j)
	if r.ctx.Err() != nil {
		return
	}
	k := j.t.key(j.chunk)
	if done {
		r.mu.Lock()
		delete(r.pending, k)
		r.mu.Unlock()
		return
	}
	j.tries++
	r.disks[j.t.disk].failures.Add(1)
	s.log.Error("corrupt chunk replica not repaired: it keeps failing its checksum here", "chain", j.t.chain, "target", j.t.id,
		"chunk", j.chunk, "attempt", j.tries, "retry_in", j.backoff, "err", err)
	delay := j.backoff
	j.backoff = min(j.backoff*2, repairMaxBackoff)
	time.AfterFunc(delay, func() {
		if r.ctx.Err() == nil {
			r.queue <- j // the job still holds its pending slot: room is reserved
		}
	})
}

// repairOnce checks the local copy and, if it is corrupt, replaces it with a
// verified copy from another serving replica. done reports that nothing is
// left to do: repaired, clean after all, gone, or no longer ours.
func (s *Server) repairOnce(ctx context.Context, j *repairJob) (done bool, err error) {
	t := j.t
	if s.target(t.chain) != t {
		return true, nil
	}
	k := t.key(j.chunk)
	h, err := t.eng.Get(k)
	if err != nil {
		// Removed, closed, or a corrupt record (nothing to repair against).
		return true, nil
	}
	m := h.Meta()
	verr := h.Verify()
	h.Release()
	switch {
	case verr == nil:
		return true, nil // rewritten meanwhile, or repaired already
	case errors.Is(verr, engine.ErrClosed):
		return true, nil
	}

	data, from, err := s.fetchVerified(ctx, t, j.chunk, m)
	if err != nil {
		return false, err
	}

	// Write it back under the chunk's lock, and only if the chunk is still
	// the version the copy was checked against: an update in between wins
	// (and the next attempt looks at the chunk afresh).
	unlock := s.locks.lock(k)
	defer unlock()
	if cur, err := t.eng.GetMeta(k); err != nil || cur != m {
		return false, fmt.Errorf("chunk changed while its copy was fetched (now %+v, %v)", cur, err)
	}
	req := &storageapi.WriteReq{Key: storageapi.Key{Chain: uint32(t.chain), ChainVer: m.ChainVer, Chunk: j.chunk},
		Kind: storageapi.KindReplace, ChunkSize: m.ChunkSize, Resync: true, UpdateVer: m.UpdateVer, CommitVer: m.CommitVer}
	resp, err := s.applyResync(t, req, data)
	if err != nil {
		return false, fmt.Errorf("rewrite the local copy: %w", err)
	}
	if resp.Meta.Checksum != m.Checksum || resp.Meta.Len != m.Len {
		// Cannot happen if ContentChecksum and the engine agree; say so loudly.
		return false, fmt.Errorf("rewritten chunk has checksum %08x length %d, want %08x length %d", resp.Meta.Checksum, resp.Meta.Len, m.Checksum, m.Len)
	}
	s.repair.disks[t.disk].repaired.Add(1)
	s.log.Warn("corrupt chunk replica repaired", "chain", t.chain, "target", t.id, "chunk", j.chunk,
		"from_target", from, "bytes", len(data), "version", m.CommitVer, "attempts", j.tries+1)
	return true, nil
}

// fetchVerified reads chunk whole from the chain's other serving replicas,
// one after another, and returns the first copy whose length and checksum
// are m's: exactly the content this replica's metadata describes.
func (s *Server) fetchVerified(ctx context.Context, t *target, chunk layout.ChunkID, m engine.Meta) ([]byte, routing.TargetID, error) {
	info := s.cfg.Routing.Current()
	c, ok := info.Chain(t.chain)
	if !ok {
		return nil, 0, fmt.Errorf("chain %d is not in routing", t.chain)
	}
	var why []string
	for _, peer := range c.Readable() {
		if peer.ID == t.id {
			continue
		}
		addr, ok := info.Addr(peer.Node)
		if !ok {
			why = append(why, fmt.Sprintf("target %d: node %d has no address", peer.ID, peer.Node))
			continue
		}
		fctx, cancel := context.WithTimeout(ctx, repairFetchTimeout)
		// Relaxed: a replica holding the same content as a pending version
		// is as good a source; the checksum decides.
		resp, data, err := s.peers.BatchRead(fctx, addr, &storageapi.BatchReadReq{Relaxed: true, IOs: []storageapi.ReadIO{{
			Key: storageapi.Key{Chain: uint32(t.chain), ChainVer: c.Version, Chunk: chunk}, Length: m.Len}}})
		cancel()
		if err == nil && len(resp.Results) != 1 {
			err = fmt.Errorf("%d results for one read", len(resp.Results))
		}
		if err == nil {
			err = resp.Results[0].Err()
		}
		if err != nil {
			why = append(why, fmt.Sprintf("target %d: %v", peer.ID, err))
			continue
		}
		n := resp.Results[0].Len
		if int(n) > len(data) || n != m.Len {
			why = append(why, fmt.Sprintf("target %d: has %d bytes, want %d", peer.ID, n, m.Len))
			continue
		}
		data = data[:n]
		if got := engine.ContentChecksum(data); got != m.Checksum {
			why = append(why, fmt.Sprintf("target %d: its copy has checksum %08x, want %08x", peer.ID, got, m.Checksum))
			continue
		}
		return data, peer.ID, nil
	}
	if len(why) == 0 {
		return nil, 0, errors.New("no other serving replica in the chain")
	}
	return nil, 0, fmt.Errorf("no verified copy on another replica: %s", strings.Join(why, "; "))
}

// repairStats fills a disk's repair figures into its stats.
func (s *Server) repairStats(disk int, d *storageapi.DiskStats) {
	r := &s.repair
	if disk >= len(r.disks) {
		return
	}
	d.RepairedChunks = r.disks[disk].repaired.Load()
	d.RepairFailures = r.disks[disk].failures.Load()
	r.mu.Lock()
	for _, j := range r.pending {
		if j.t.disk == disk {
			d.UnrepairedChunks++
		}
	}
	r.mu.Unlock()
}
