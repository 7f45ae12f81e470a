package console

import (
	"cmp"
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
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
	// The latency histograms of that I/O and each node's part (rates
	// carry what they say).
	ReadLat, WriteLat []uint64 `json:"-"`
	Nodes             []nodeIO `json:"-"`
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
	// Latency percentiles of the client I/O in the interval, in seconds:
	// upper bounds (the bucket the percentile falls in, bounds doubling
	// from 16 µs); null without operations.
	ReadP50  *float64 `json:"readP50"`
	ReadP99  *float64 `json:"readP99"`
	WriteP50 *float64 `json:"writeP50"`
	WriteP99 *float64 `json:"writeP99"`
	// Nodes: each storage node's part.
	Nodes []nodeRate `json:"nodes"`
}

// nodeRate is one storage node's client I/O in an interval.
type nodeRate struct {
	Node           uint32   `json:"node"`
	ReadBytesPerS  float64  `json:"readBytesPerSec"`
	WriteBytesPerS float64  `json:"writeBytesPerSec"`
	ReadOpsPerS    float64  `json:"readOpsPerSec"`
	WriteOpsPerS   float64  `json:"writeOpsPerSec"`
	ReadP99        *float64 `json:"readP99"`
	WriteP99       *float64 `json:"writeP99"`
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
	coarse coarseRing // history.go
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
		d := ioSince(s.sampled, ns)
		p.IO, p.IOKnown = d.Sum, true
		for i := range d.Nodes {
			n := &d.Nodes[i]
			n.ReadP99, n.WriteP99 = quantileSeconds(n.ReadLat, 0.99), quantileSeconds(n.WriteLat, 0.99)
			n.ReadLat, n.WriteLat = nil, nil
		}
		p.ReadLat, p.WriteLat, p.Nodes = d.ReadLat, d.WriteLat, d.Nodes
	}
	s.sampled = ns
	s.coarse.add(p)
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
// Back further than the samples kept (an hour), the coarse points of
// history.go: a point a minute, rates the minutes' averages.
func (s *sampler) series(from time.Time) ([]point, []ratePoint) {
	s.mu.Lock()
	ring := s.points
	if len(ring) > 0 && from.Before(ring[0].At.Add(-coarseStep)) && len(s.coarse.points) > 0 && s.coarse.points[0].At.Before(ring[0].At) {
		ring = s.coarse.points
	}
	i := sort.Search(len(ring), func(i int) bool { return !ring[i].At.Before(from) })
	pts := append([]point(nil), ring[i:]...)
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
			r.ReadP50, r.ReadP99 = quantileSeconds(b.ReadLat, 0.5), quantileSeconds(b.ReadLat, 0.99)
			r.WriteP50, r.WriteP99 = quantileSeconds(b.WriteLat, 0.5), quantileSeconds(b.WriteLat, 0.99)
			r.Nodes = make([]nodeRate, 0, len(b.Nodes))
			for _, n := range b.Nodes {
				r.Nodes = append(r.Nodes, nodeRate{Node: uint32(n.Node), ReadBytesPerS: float64(n.IO.ReadBytes) / dt, WriteBytesPerS: float64(n.IO.WriteBytes) / dt,
					ReadOpsPerS: float64(n.IO.ReadOps) / dt, WriteOpsPerS: float64(n.IO.WriteOps) / dt,
					ReadP99: n.ReadP99, WriteP99: n.WriteP99})
			}
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

// ioDelta is the I/O served between two fetches: the sum over the nodes
// that answered both in the same incarnation, their latency histograms
// summed, and each such node's own part.
type ioDelta struct {
	Sum               client.IOCounters
	ReadLat, WriteLat []uint64
	Nodes             []nodeIO
}

// nodeIO is one node's I/O between two fetches. A point keeps its p99s,
// not its histograms: an hour of samples of a hundred nodes' histograms
// would take tens of megabytes.
type nodeIO struct {
	Node              routing.NodeID
	IO                client.IOCounters
	ReadLat, WriteLat []uint64 // nil once kept in a point
	ReadP99, WriteP99 *float64
}

// ioSince is the I/O each node served between two fetches, over the nodes
// that answered both in the same incarnation (a restarted node's counters
// start over, and a node seen once has no interval).
func ioSince(before, after *nodeStats) ioDelta {
	d := ioDelta{ReadLat: make([]uint64, storageapi.LatencySlots), WriteLat: make([]uint64, storageapi.LatencySlots)}
	for id, b := range after.nodes {
		a, ok := before.nodes[id]
		if !ok || a.Incarnation != b.Incarnation {
			continue
		}
		x, y := a.IO, b.IO
		if y.ReadOps < x.ReadOps || y.ReadBytes < x.ReadBytes || y.WriteOps < x.WriteOps || y.WriteBytes < x.WriteBytes {
			continue
		}
		n := nodeIO{Node: id, IO: client.IOCounters{ReadOps: y.ReadOps - x.ReadOps, ReadBytes: y.ReadBytes - x.ReadBytes,
			WriteOps: y.WriteOps - x.WriteOps, WriteBytes: y.WriteBytes - x.WriteBytes},
			ReadLat: histSince(a.ReadLatency, b.ReadLatency), WriteLat: histSince(a.WriteLatency, b.WriteLatency)}
		d.Sum.ReadOps += n.IO.ReadOps
		d.Sum.ReadBytes += n.IO.ReadBytes
		d.Sum.WriteOps += n.IO.WriteOps
		d.Sum.WriteBytes += n.IO.WriteBytes
		for i := range d.ReadLat {
			d.ReadLat[i] += n.ReadLat[i]
			d.WriteLat[i] += n.WriteLat[i]
		}
		d.Nodes = append(d.Nodes, n)
	}
	slices.SortFunc(d.Nodes, func(a, b nodeIO) int { return cmp.Compare(a.Node, b.Node) })
	return d
}

// histSince is the latency histogram between two fetches of one node's
// counts (all zero when either has none, from a node that does not report
// them, or they went backwards).
func histSince(before, after []uint64) []uint64 {
	out := make([]uint64, storageapi.LatencySlots)
	if len(before) != storageapi.LatencySlots || len(after) != storageapi.LatencySlots {
		return out
	}
	for i := range out {
		if after[i] < before[i] {
			return make([]uint64, storageapi.LatencySlots)
		}
		out[i] = after[i] - before[i]
	}
	return out
}

// quantileSeconds is LatencyQuantile in seconds (nil: no operations).
func quantileSeconds(h []uint64, q float64) *float64 {
	d, _, ok := storageapi.LatencyQuantile(h, q)
	if !ok {
		return nil
	}
	v := d.Seconds()
	return &v
}
