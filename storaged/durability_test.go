package storaged_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/durability"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/e2e/harness"
)

// TestRelaxedWritesSyncOnEveryReplica: a relaxed update (a mount's) is
// applied relaxed on every replica of its chain, and the client's Sync
// (fsync) makes it durable on each; a strict update leaves nothing to sync.
func TestRelaxedWritesSyncOnEveryReplica(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 2, SyncWindow: time.Hour})
	cl := c.Client(10 * time.Second)
	unsynced := func() (n int) {
		for i := range c.Nodes {
			for _, e := range c.Server(i).Engines() {
				if e.Stats().Unsynced {
					n++
				}
			}
		}
		return n
	}
	small, big := pattern(1, 3000), pattern(2, 300_000)
	if _, err := cl.Write(ctx, 1, layout.MakeChunkID(9, 0), 0, small, chunkSize); err != nil {
		t.Fatal(err)
	}
	if n := unsynced(); n != 0 {
		t.Fatalf("a strict write left %d disks with updates to sync", n)
	}
	rctx := durability.Relaxed(ctx)
	if _, err := cl.Write(rctx, 1, layout.MakeChunkID(9, 1), 0, small, chunkSize); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Write(rctx, 1, layout.MakeChunkID(9, 2), 0, big, chunkSize); err != nil {
		t.Fatal(err)
	}
	if n := unsynced(); n != 3 {
		t.Fatalf("relaxed writes to a chain of 3 left %d disks to sync, want 3", n)
	}
	if err := cl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := unsynced(); n != 0 {
		t.Fatalf("after Sync %d disks still have updates to sync", n)
	}
	for _, n := range servingNodes(c, 1) {
		for i, want := range [][]byte{small, small, big} {
			got, err := replicaRead(t, c, n, 1, layout.MakeChunkID(9, uint64(i)), chunkSize)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s serves chunk %d as %d bytes (%v)", c.Nodes[n].Name, i, len(got), err)
			}
		}
	}
}
