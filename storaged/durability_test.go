package storaged_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/client"
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
	small, big := pattern(1, 3000), pattern(2, 300_000)
	if _, err := cl.Write(ctx, 1, layout.MakeChunkID(9, 0), 0, small, chunkSize); err != nil {
		t.Fatal(err)
	}
	if n, _ := toSync(c); n != 0 {
		t.Fatalf("a strict write left %d disks with updates to sync", n)
	}
	rctx := durability.Relaxed(ctx)
	if _, err := cl.Write(rctx, 1, layout.MakeChunkID(9, 1), 0, small, chunkSize); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Write(rctx, 1, layout.MakeChunkID(9, 2), 0, big, chunkSize); err != nil {
		t.Fatal(err)
	}
	if n, _ := toSync(c); n != 3 {
		t.Fatalf("relaxed writes to a chain of 3 left %d disks to sync, want 3", n)
	}
	if err := cl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := toSync(c); n != 0 {
		t.Fatalf("after Sync %d disks still have updates to sync", n)
	}
	checkReplicas(t, c, 9, small, small, big)
}

// TestStagedWritesSyncAtSyncOnEveryReplica: a staged update (an S3 body's)
// reaches every replica of its chain with its flag, so each one writes the
// content without syncing its data file and leaves that to the client's
// Sync; a relaxed update that is not staged syncs its content on every
// replica before its record.
func TestStagedWritesSyncAtSyncOnEveryReplica(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, SyncWindow: time.Hour})
	cl := c.Client(10 * time.Second)
	plain, body := pattern(3, 700_000), pattern(4, 1<<20)
	rctx := durability.Relaxed(ctx)
	if _, err := cl.Write(rctx, 1, layout.MakeChunkID(11, 0), 0, plain, chunkSize); err != nil {
		t.Fatal(err)
	}
	if r, n := toSync(c); r != 3 || n != 0 {
		t.Fatalf("a relaxed write to a chain of 3: %d disks with records to sync and %d with content, want 3 and 0", r, n)
	}
	if _, err := cl.Write(client.Staged(rctx), 1, layout.MakeChunkID(11, 1), 0, body, chunkSize); err != nil {
		t.Fatal(err)
	}
	if r, n := toSync(c); r != 3 || n != 3 {
		t.Fatalf("a staged write to a chain of 3: %d disks with records to sync and %d with content, want 3 and 3", r, n)
	}
	if err := cl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if r, n := toSync(c); r != 0 || n != 0 {
		t.Fatalf("after Sync: %d disks with records to sync and %d with content, want none", r, n)
	}
	checkReplicas(t, c, 11, plain, body)
}

// toSync counts the disks of c with relaxed records awaiting a sync, and
// those with staged content awaiting one.
func toSync(c *harness.StorageCluster) (records, content int) {
	for i := range c.Nodes {
		for _, e := range c.Server(i).Engines() {
			st := e.Stats()
			if st.Unsynced {
				records++
			}
			if st.StagedUnsynced {
				content++
			}
		}
	}
	return records, content
}

// checkReplicas fails unless every serving replica of chain 1 holds want[i]
// as chunk i of file.
func checkReplicas(t *testing.T, c *harness.StorageCluster, file uint64, want ...[]byte) {
	t.Helper()
	for _, n := range servingNodes(c, 1) {
		for i, w := range want {
			got, err := replicaRead(t, c, n, 1, layout.MakeChunkID(file, uint64(i)), chunkSize)
			if err != nil || !bytes.Equal(got, w) {
				t.Fatalf("%s serves chunk %d of file %d as %d bytes (%v)", c.Nodes[n].Name, i, file, len(got), err)
			}
		}
	}
}
