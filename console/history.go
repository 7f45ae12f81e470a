package console

import "time"

// The charts' history is two rings: every sample for historyWindow (an
// hour at the sample interval), and a coarse point per coarseStep for
// coarseWindow (a day). A coarse point is the samples of its step merged:
// the levels (stored bytes, chunks, inodes, namespace bytes) of its last
// sample and the I/O of all of them summed, so the rate between two coarse
// points is the step's average; its latency histograms add, and each
// node's p99 is the worst of the step's (p99s do not add).
const (
	coarseStep   = time.Minute
	coarseWindow = 24 * time.Hour
)

// coarseKeep is how many coarse points the ring keeps.
const coarseKeep = int(coarseWindow/coarseStep) + 1

// mergePoint folds sample p (the next after what acc holds) into acc.
func mergePoint(acc *point, p point) {
	io, known := acc.IO, acc.IOKnown
	readLat, writeLat, nodes := acc.ReadLat, acc.WriteLat, acc.Nodes
	*acc = p // the levels and the time are the newest sample's
	acc.IO, acc.IOKnown = io, known
	if p.IOKnown {
		acc.IO.ReadOps += p.IO.ReadOps
		acc.IO.ReadBytes += p.IO.ReadBytes
		acc.IO.WriteOps += p.IO.WriteOps
		acc.IO.WriteBytes += p.IO.WriteBytes
		acc.IOKnown = true
	}
	acc.ReadLat, acc.WriteLat = addHist(readLat, p.ReadLat), addHist(writeLat, p.WriteLat)
	acc.Nodes = mergeNodes(nodes, p.Nodes)
}

func addHist(a, b []uint64) []uint64 {
	if len(a) == 0 {
		return append([]uint64(nil), b...)
	}
	out := append([]uint64(nil), a...)
	for i := range min(len(out), len(b)) {
		out[i] += b[i]
	}
	return out
}

// mergeNodes adds each node's I/O and keeps its worst p99s.
func mergeNodes(a, b []nodeIO) []nodeIO {
	out := append([]nodeIO(nil), a...)
	for _, n := range b {
		i := 0
		for i < len(out) && out[i].Node != n.Node {
			i++
		}
		if i == len(out) {
			out = append(out, nodeIO{Node: n.Node})
		}
		m := &out[i]
		m.IO.ReadOps += n.IO.ReadOps
		m.IO.ReadBytes += n.IO.ReadBytes
		m.IO.WriteOps += n.IO.WriteOps
		m.IO.WriteBytes += n.IO.WriteBytes
		m.ReadP99, m.WriteP99 = worst(m.ReadP99, n.ReadP99), worst(m.WriteP99, n.WriteP99)
	}
	return out
}

func worst(a, b *float64) *float64 {
	switch {
	case a == nil:
		return b
	case b == nil || *a >= *b:
		return a
	}
	return b
}

// coarseRing keeps the coarse points: pending merges the samples of the
// step under way (since began), and joins the ring once the step is over.
type coarseRing struct {
	points  []point
	pending *point
	began   time.Time
}

// add takes the next sample.
func (r *coarseRing) add(p point) {
	if r.pending == nil {
		r.pending, r.began = &point{}, p.At
	}
	mergePoint(r.pending, p)
	if p.At.Sub(r.began) >= coarseStep {
		r.points = append(r.points, *r.pending)
		if len(r.points) > coarseKeep {
			r.points = append(r.points[:0], r.points[len(r.points)-coarseKeep:]...)
		}
		r.pending = nil
	}
}
