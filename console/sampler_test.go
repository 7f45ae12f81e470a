package console

import (
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
	if got, want := ioSince(before, after), io(30, 10); got != want {
		t.Fatalf("ioSince = %+v, want %+v", got, want)
	}
}
