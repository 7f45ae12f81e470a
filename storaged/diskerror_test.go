package storaged_test

import (
	"bytes"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/storaged/engine"
)

// TestDiskErrorTakesReplicaOut: a replica whose disk fails a read, and
// then another whose disk fails a write, stop serving; every client read
// and write succeeds meanwhile on the replicas that remain. Once the disks
// are healed and their storaged restarted (a replaced or checked disk),
// recovery brings both replicas back with every chunk written meanwhile.
func TestDiskErrorTakesReplicaOut(t *testing.T) {
	const T = time.Second
	c := harness.StartCluster(t, harness.ClusterConfig{Nodes: 3, Chains: 1, T: T, NoSync: true})
	cl := c.Client(10 * time.Second)
	want := map[layout.ChunkID][]byte{}
	write := func(i uint64, n int) {
		t.Helper()
		chunk := layout.MakeChunkID(7, i)
		data := pattern(i*31+uint64(n), n)
		if _, err := cl.Write(ctx, 1, chunk, 0, data, chunkSize); err != nil {
			t.Fatalf("write chunk %d: %v", i, err)
		}
		if old := want[chunk]; len(old) > n {
			data = append(data, old[n:]...)
		}
		want[chunk] = data
	}
	readAll := func(when string, rounds int) {
		t.Helper()
		for r := 0; r < rounds; r++ {
			for chunk, data := range want {
				got, err := cl.Read(ctx, client.ReadIO{Chain: 1, Chunk: chunk, Length: chunkSize}, false)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("%s: read of chunk %v: %d bytes, %v", when, chunk, len(got), err)
				}
			}
		}
	}
	for i := uint64(0); i < 8; i++ {
		write(i, 100_000)
	}

	// Node 2's disk fails its reads: reads spread over the replicas, so
	// some meet the fault, and each is served by another replica.
	c.C.DiskFaults(1).Fail(engine.OpRead, syscall.EIO)
	readAll("node 2's disk failing reads", 3)
	c.WaitFor(10*T, "node 2's target taken out", func(in *routing.Info) bool { return allAre(nodeStates(in, 2), routing.Offline) })
	readAll("node 2 out", 1)

	// Node 3's disk fails its writes: the next write reaches it as a
	// forward and fails there; the head goes on once routing drops it.
	c.C.DiskFaults(2).Fail(engine.OpWrite, syscall.EIO)
	write(0, 50_000)
	c.WaitFor(10*T, "node 3's target taken out", func(in *routing.Info) bool { return allAre(nodeStates(in, 3), routing.Offline) })
	for i := uint64(8); i < 12; i++ {
		write(i, 70_000)
	}
	readAll("nodes 2 and 3 out", 1)

	for _, i := range []int{1, 2} {
		c.C.DiskFaults(i).Heal()
		c.Kill(i)
		if err := c.Start(i); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitHealthy(30 * T)
	convergedManaged(t, c)
	for i := range c.Nodes {
		for chunk, data := range want {
			got, err := readFrom(t, c, i, 1, chunk, chunkSize)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("node %d after recovery serves chunk %v as %d bytes, %v", i+1, chunk, len(got), err)
			}
		}
	}
}
