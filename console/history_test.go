package console

import (
	"math"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
)

// TestCoarseHistory: samples every 2 s fold into a point a minute whose
// rates are the minute's averages (the same steady rate as the samples'),
// with the levels of the minute's last sample, the latency histograms added
// and each node's worst p99; past the hour of samples, series answers
// from the coarse points.
func TestCoarseHistory(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	var r coarseRing
	s := &sampler{}
	lat := make([]uint64, storageapi.LatencySlots)
	lat[3] = 1
	for i := 0; i < 30*60*3; i++ { // three hours
		p99 := 0.001 * float64(1+i%7)
		p := point{At: t0.Add(time.Duration(i) * 2 * time.Second), StoredBytes: uint64(i), IOKnown: i > 0,
			IO: storageapi.IOCounters{ReadBytes: 200, ReadOps: 2}, ReadLat: lat,
			Nodes: []nodeIO{{Node: 1, IO: storageapi.IOCounters{ReadBytes: 200}, ReadP99: &p99}}}
		if i == 0 {
			p.IO, p.ReadLat, p.Nodes = storageapi.IOCounters{}, nil, nil
		}
		r.add(p)
		s.points = append(s.points, p)
	}
	if n := len(r.points); n < 170 || n > 180 {
		t.Fatalf("%d coarse points in three hours", n)
	}
	a, b := r.points[10], r.points[11]
	if b.At.Sub(a.At) < coarseStep || b.StoredBytes != uint64(b.At.Sub(t0)/(2*time.Second)) {
		t.Fatalf("coarse points %v → %v, level %d", a.At, b.At, b.StoredBytes)
	}
	samples := int(b.At.Sub(a.At) / (2 * time.Second))
	if b.IO.ReadBytes != uint64(200*samples) || b.ReadLat[3] != uint64(samples) || len(b.Nodes) != 1 || *b.Nodes[0].ReadP99 != 0.007 {
		t.Fatalf("coarse point %+v (node %+v), want %d samples' I/O and the worst p99", b, b.Nodes, samples)
	}

	// The fine ring keeps the last hour; a day's range reads the coarse one.
	s.points = s.points[len(s.points)-keepSamples(2*time.Second):]
	s.coarse = r
	end := s.points[len(s.points)-1].At
	fine, _ := s.series(end.Add(-time.Hour))
	if len(fine) != 1801 {
		t.Fatalf("an hour's range: %d points", len(fine))
	}
	pts, rates := s.series(end.Add(-3 * time.Hour))
	if len(pts) < 170 || len(rates) != len(pts)-1 {
		t.Fatalf("a longer range: %d points, %d rates", len(pts), len(rates))
	}
	for _, rp := range rates[1:] {
		if rp.ReadBytesPerS == nil || math.Abs(*rp.ReadBytesPerS-100) > 1e-9 || rp.ReadP99 == nil || len(rp.Nodes) != 1 || math.Abs(rp.Nodes[0].ReadBytesPerS-100) > 1e-9 {
			t.Fatalf("coarse rate %+v, want the steady 100 B/s", rp)
		}
	}
}
