package console

import (
	"slices"
	"testing"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/routing"
)

// TestIOSinceLeavesOutRestartedNodes: the I/O of an interval sums the nodes
// that answered both samples in one incarnation; a restarted node (counters
// from zero) and a node seen once add nothing.
func TestIOSinceLeavesOutRestartedNodes(t *testing.T) {
	io := func(r, w uint64) storageapi.IOCounters {
		return storageapi.IOCounters{ReadOps: r, ReadBytes: r * 10, WriteOps: w, WriteBytes: w * 10}
	}
	stats := func(m map[routing.NodeID]*storageapi.StatsResp) *nodeStats { return &nodeStats{nodes: m} }
	before := stats(map[routing.NodeID]*storageapi.StatsResp{
		1: {Incarnation: 7, IO: io(100, 50)},
		2: {Incarnation: 8, IO: io(900, 900)},
		3: {Incarnation: 9, IO: io(5, 5)},
	})
	after := stats(map[routing.NodeID]*storageapi.StatsResp{
		1: {Incarnation: 7, IO: io(130, 60)}, // +30 reads, +10 writes
		2: {Incarnation: 11, IO: io(4, 4)},   // restarted
		4: {Incarnation: 12, IO: io(70, 70)}, // new
	})
	d := ioSince(before, after)
	if got, want := d.Sum, io(30, 10); got != want {
		t.Fatalf("ioSince = %+v, want %+v", got, want)
	}
	if len(d.Nodes) != 1 || d.Nodes[0].Node != 1 || d.Nodes[0].IO != io(30, 10) {
		t.Fatalf("per node: %+v", d.Nodes)
	}
}

// TestIOSinceLatency: the latency histograms of an interval subtract each
// node's counts and add the nodes; a node without counts (an older
// storaged) or with counts that went backwards adds none.
func TestIOSinceLatency(t *testing.T) {
	hist := func(kv ...uint64) []uint64 {
		h := make([]uint64, storageapi.LatencySlots)
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	stats := func(m map[routing.NodeID]*storageapi.StatsResp) *nodeStats { return &nodeStats{nodes: m} }
	before := stats(map[routing.NodeID]*storageapi.StatsResp{
		1: {Incarnation: 1, ReadLatency: hist(2, 10), WriteLatency: hist(6, 1)},
		2: {Incarnation: 2, ReadLatency: hist(2, 5)},
		3: {Incarnation: 3},
		4: {Incarnation: 4, ReadLatency: hist(2, 50)},
	})
	after := stats(map[routing.NodeID]*storageapi.StatsResp{
		1: {Incarnation: 1, ReadLatency: hist(2, 60, 9, 1), WriteLatency: hist(6, 11)}, // +50 at 64 µs, +1 at 8 ms; +10 writes at 1 ms
		2: {Incarnation: 2, ReadLatency: hist(2, 54)},                                  // +49 at 64 µs
		3: {Incarnation: 3, ReadLatency: hist(0, 7)},                                   // no counts before
		4: {Incarnation: 4, ReadLatency: hist(2, 40)},                                  // went backwards
	})
	d := ioSince(before, after)
	if want := hist(2, 99, 9, 1); !slices.Equal(d.ReadLat, want) {
		t.Fatalf("read histogram %v, want %v", d.ReadLat, want)
	}
	if p50, p99 := quantileSeconds(d.ReadLat, 0.5), quantileSeconds(d.ReadLat, 0.99); *p50 != 64e-6 || *p99 != 64e-6 {
		t.Errorf("read p50 %v p99 %v", *p50, *p99)
	}
	if p := quantileSeconds(d.ReadLat, 1); *p != 8192e-6 {
		t.Errorf("read p100 %v", *p)
	}
	if p := quantileSeconds(d.WriteLat, 0.99); *p != 1024e-6 {
		t.Errorf("write p99 %v", *p)
	}
	if p := quantileSeconds(make([]uint64, storageapi.LatencySlots), 0.5); p != nil {
		t.Errorf("a quantile of no operations: %v", *p)
	}
}
