package storaged_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/e2e/harness"
)

// TestRestartKeepsCommittedChunks kills every storaged and starts them again
// on the same data: what was committed is served again by every replica.
func TestRestartKeepsCommittedChunks(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 2})
	cl := c.Client(10 * time.Second)
	want := map[layout.ChunkID][]byte{}
	for i := uint64(0); i < 20; i++ {
		chunk := layout.MakeChunkID(5, i)
		want[chunk] = pattern(i, 10_000+int(i)*3000)
		if _, err := cl.Write(ctx, 1+routingChain(i), chunk, 0, want[chunk], chunkSize); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.Nodes {
		c.Kill(i)
	}
	if _, err := c.Client(300*time.Millisecond).Read(ctx, client.ReadIO{Chain: 1, Chunk: layout.MakeChunkID(5, 0), Length: 10}, false); err == nil {
		t.Fatal("a read succeeded with every storaged killed")
	}
	for i := range c.Nodes {
		if err := c.Start(i); err != nil {
			t.Fatal(err)
		}
	}
	for i := uint64(0); i < 20; i++ {
		chunk := layout.MakeChunkID(5, i)
		for _, n := range servingNodes(c, 1+routingChain(i)) {
			got, err := replicaRead(t, c, n, 1+routingChain(i), chunk, chunkSize)
			if err != nil || !bytes.Equal(got, want[chunk]) {
				t.Fatalf("after restart, %s serves chunk %d as %d bytes, %v", c.Nodes[n].Name, i, len(got), err)
			}
		}
	}
	// And writing goes on where it stopped: versions continue.
	meta, err := cl.Write(ctx, 1, layout.MakeChunkID(5, 0), 0, []byte("again"), chunkSize)
	if err != nil || meta.CommitVer != 2 {
		t.Fatalf("write after restart: %+v %v", meta, err)
	}
	checkConverged(t, c)
}

func routingChain(i uint64) routing.ChainID { return routing.ChainID(i % 2) }

// TestCutLinks cuts the network between services and between the client
// and a replica.
func TestCutLinks(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, NoSync: true, ForwardTimeout: 600 * time.Millisecond})
	cl := c.Client(time.Second)
	chunk := layout.MakeChunkID(9, 0)
	if _, err := cl.Write(ctx, 1, chunk, 0, []byte("before"), chunkSize); err != nil {
		t.Fatal(err)
	}
	// Head cut off from its successor: the write cannot complete and is
	// reported failed, never acknowledged.
	c.Net.Cut("n1", "n2")
	_, err := cl.Write(ctx, 1, chunk, 0, []byte("during"), chunkSize)
	if rpc.CodeOf(err) != rpc.Unavailable {
		t.Fatalf("write across a cut link: %v", err)
	}
	// Readers are not blocked by the cut between servers: the tail serves the
	// committed version; the head and middle hold a pending one and refuse.
	got, err := replicaRead(t, c, 2, 1, chunk, 100)
	if err != nil || string(got) != "before" {
		t.Fatalf("tail read during the cut: %q %v", got, err)
	}
	if _, err := replicaRead(t, c, 0, 1, chunk, 100); rpc.CodeOf(err) != storageapi.CodeNotCommitted {
		t.Fatalf("head read of a pending chunk: %v", err)
	}
	c.Net.Heal("n1", "n2")
	// With no further write, the head re-drives its leftover pending update:
	// the failed write completes (its outcome was unknown) on every replica.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got, err := replicaRead(t, c, 2, 1, chunk, 100); err == nil && string(got) == "during" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkConverged(t, c)
	for n := 0; n < 3; n++ {
		if got, err := replicaRead(t, c, n, 1, chunk, 100); err != nil || string(got) != "during" {
			t.Fatalf("after the heal, %s serves %q (%v)", c.Nodes[n].Name, got, err)
		}
	}
	if _, err := cl.Write(ctx, 1, chunk, 0, []byte("after!"), chunkSize); err != nil {
		t.Fatal(err)
	}
	checkConverged(t, c)

	// The client cut off from one replica still reads, from the others.
	c.Net.Cut("client", "n2")
	for i := 0; i < 6; i++ {
		got, err := cl.Read(ctx, client.ReadIO{Chain: 1, Chunk: chunk, Length: 100}, false)
		if err != nil || string(got) != "after!" {
			t.Fatalf("read %d with a replica cut off: %q %v", i, got, err)
		}
	}
}
