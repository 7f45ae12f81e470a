package console

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/routing"
)

// historyWindow is how far back the charts' history goes, sampled whether or
// not anyone is signed in.
const historyWindow = time.Hour

// keepSamples bounds the history: historyWindow at the sample interval (at
// least 150 samples).
func keepSamples(interval time.Duration) int {
	return max(150, int(historyWindow/max(interval, time.Millisecond))+1)
}

// point is one sample of the cluster's counters, charted as rates between
// samples: client reads and writes (bytes and operations) the storage nodes
// served, the net change of bytes and chunks they store (all replicas), and,
// with a namespace client, of the namespace's file bytes and inode count.
type point struct {
	At          time.Time `json:"t"`
	StoredBytes uint64    `json:"storedBytes"`
	Chunks      uint64    `json:"chunks"`
	NodesOK     int       `json:"nodesAnswered"`
	NSBytes     int64     `json:"nsBytes"`
	Inodes      int64     `json:"inodes"`
	NSOK        bool      `json:"nsKnown"`
	// I/O served since the previous sample, summed over the nodes that
	// answered both (a node that restarted in between starts over and is
	// left out of this one).
	IO      client.IOCounters `json:"io"`
	IOKnown bool              `json:"ioKnown"`
}

// ratePoint is the per-second change between two consecutive samples.
type ratePoint struct {
	At              time.Time `json:"t"`
	StoredBytesPerS float64   `json:"storedBytesPerSec"`
	ChunksPerS      float64   `json:"chunksPerSec"`
	NSBytesPerS     *float64  `json:"nsBytesPerSec"`
	ReadBytesPerS   *float64  `json:"readBytesPerSec"`
	WriteBytesPerS  *float64  `json:"writeBytesPerSec"`
	ReadOpsPerS     *float64  `json:"readOpsPerSec"`
	WriteOpsPerS    *float64  `json:"writeOpsPerSec"`
	InodesPerS      *float64  `json:"inodesPerSec"`
	Comparable      bool      `json:"comparable"` // the same nodes answered both samples
	IntervalSeconds float64   `json:"intervalSeconds"`
}

// syncProgress is a recovery as its predecessor reports it.
type syncProgress struct {
	From       routing.TargetID
	ChunksDone uint64
	Chunks     uint64
	BytesDone  uint64
	Bytes      uint64 // to send in all (0: not reported)
}

// nodeStats is the newest Stats answer of every storage node that answered.
type nodeStats struct {
	at    time.Time
	nodes map[routing.NodeID]*client.NodeStats
	// sync maps a syncing target to the recovery that feeds it.
	sync map[routing.TargetID]syncProgress
}

type sampler struct {
	c *Console

	mu     sync.Mutex
	points []point
	last   *nodeStats // newest
	prev   *nodeStats // the one before, for recovery rates
	// sampled is the previous sample's stats, which the I/O deltas of the
	// next point are taken against (last may be a fresher fetch).
	sampled *nodeStats
}

func newSampler(c *Console) *sampler { return &sampler{c: c} }

// sample polls the storage nodes (and the namespace) once.
func (s *sampler) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.c.cfg.SampleInterval)
	defer cancel()
	info, err := s.c.routing(ctx)
	if err != nil {
		return // the overview reports the lost connection itself
	}
	ns := s.fetchStats(ctx, info)
	p := point{At: ns.at}
	for _, st := range ns.nodes {
		p.NodesOK++
		for _, d := range st.Disks {
			p.StoredBytes += d.UsedBytes
			p.Chunks += d.Chunks
		}
	}
	if tot, ok := s.c.namespaceTotals(ctx); ok {
		p.NSBytes, p.Inodes, p.NSOK = tot.bytes, tot.inodes, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sampled != nil {
		p.IO, p.IOKnown = ioSince(s.sampled, ns), true
	}
	s.sampled = ns
	s.points = append(s.points, p)
	if keep := keepSamples(s.c.cfg.SampleInterval); len(s.points) > keep {
		s.points = append(s.points[:0], s.points[len(s.points)-keep:]...)
	}
	s.prev, s.last = s.last, ns
}

// fetchStats asks every storage node in routing for its stats, in parallel.
func (s *sampler) fetchStats(ctx context.Context, info *routing.Info) *nodeStats {
	out := &nodeStats{nodes: s.c.cfg.FS.NodeStats(ctx, info), sync: map[routing.TargetID]syncProgress{}}
	out.at = s.c.cfg.Now()
	for _, st := range out.nodes {
		for _, t := range st.Targets {
			if t.SyncTarget != 0 {
				out.sync[routing.TargetID(t.SyncTarget)] = syncProgress{From: routing.TargetID(t.Target),
					ChunksDone: t.SyncChunksDone, Chunks: t.SyncChunks, BytesDone: t.SyncBytesDone, Bytes: t.SyncBytes}
			}
		}
	}
	return out
}

// stats returns node stats no older than one sample interval, fetching
// them when the sampler has none that fresh.
func (s *sampler) stats(ctx context.Context, info *routing.Info) (last, prev *nodeStats) {
	s.mu.Lock()
	last, prev = s.last, s.prev
	s.mu.Unlock()
	if last != nil && s.c.cfg.Now().Sub(last.at) <= s.c.cfg.SampleInterval {
		return last, prev
	}
	fresh := s.fetchStats(ctx, info)
	s.mu.Lock()
	if s.last == last {
		s.prev, s.last = s.last, fresh
	}
	last, prev = s.last, s.prev
	s.mu.Unlock()
	return last, prev
}

func (s *sampler) hasPoints() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.points) > 0
}

// series returns the samples since from and the rates between them.
func (s *sampler) series(from time.Time) ([]point, []ratePoint) {
	s.mu.Lock()
	i := sort.Search(len(s.points), func(i int) bool { return !s.points[i].At.Before(from) })
	pts := append([]point(nil), s.points[i:]...)
	s.mu.Unlock()
	rates := make([]ratePoint, 0, len(pts))
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		dt := b.At.Sub(a.At).Seconds()
		if dt <= 0 {
			continue
		}
		r := ratePoint{At: b.At, IntervalSeconds: dt, Comparable: a.NodesOK == b.NodesOK,
			StoredBytesPerS: (float64(b.StoredBytes) - float64(a.StoredBytes)) / dt,
			ChunksPerS:      (float64(b.Chunks) - float64(a.Chunks)) / dt}
		if b.IOKnown {
			perS := func(v uint64) *float64 { r := float64(v) / dt; return &r }
			r.ReadBytesPerS, r.WriteBytesPerS = perS(b.IO.ReadBytes), perS(b.IO.WriteBytes)
			r.ReadOpsPerS, r.WriteOpsPerS = perS(b.IO.ReadOps), perS(b.IO.WriteOps)
		}
		if a.NSOK && b.NSOK {
			nb := float64(b.NSBytes-a.NSBytes) / dt
			ni := float64(b.Inodes-a.Inodes) / dt
			r.NSBytesPerS, r.InodesPerS = &nb, &ni
		}
		rates = append(rates, r)
	}
	return pts, rates
}

// ioSince sums the I/O each node served between two fetches, over the nodes
// that answered both in the same incarnation.
func ioSince(before, after *nodeStats) client.IOCounters {
	var sum client.IOCounters
	for id, b := range after.nodes {
		a, ok := before.nodes[id]
		if !ok || a.Incarnation != b.Incarnation {
			continue
		}
		x, y := a.IO, b.IO
		if y.ReadOps < x.ReadOps || y.ReadBytes < x.ReadBytes || y.WriteOps < x.WriteOps || y.WriteBytes < x.WriteBytes {
			continue
		}
		sum.ReadOps += y.ReadOps - x.ReadOps
		sum.ReadBytes += y.ReadBytes - x.ReadBytes
		sum.WriteOps += y.WriteOps - x.WriteOps
		sum.WriteBytes += y.WriteBytes - x.WriteBytes
	}
	return sum
}
