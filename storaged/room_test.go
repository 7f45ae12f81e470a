package storaged_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/e2e/harness"
)

// A chain whose routing says a replica's disk is full refuses writes at its
// head before applying anything (so no replica is left with a pending
// version), reads go on, and writes resume once routing says the disk has
// room again.
func TestWriteToAChainWithAFullReplica(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, NoSync: true})
	cl := c.Client(5 * time.Second)
	chunk := layout.MakeChunkID(7, 0)
	old := pattern(1, 100_000)
	if _, err := cl.Write(ctx, 1, chunk, 0, old, chunkSize); err != nil {
		t.Fatal(err)
	}
	setFull := func(full bool) {
		c.Routing.Update(func(in *routing.Info) {
			ch := in.Chains[1]
			ch.Targets[len(ch.Targets)-1].Full = full // the tail's disk
			in.Version++
		})
	}
	setFull(true)
	_, err := cl.Write(ctx, 1, chunk, 0, pattern(2, 100_000), chunkSize)
	if !errors.Is(err, client.ErrNoSpace) {
		t.Fatalf("a write to a chain with a full replica: %v, want client.ErrNoSpace", err)
	}
	for _, n := range servingNodes(c, 1) {
		got, err := replicaRead(t, c, n, 1, chunk, chunkSize)
		if err != nil || !bytes.Equal(got, old) {
			t.Fatalf("replica %s after the refused write: %d bytes, %v (want the old content, nothing pending)", c.Nodes[n].Name, len(got), err)
		}
	}
	setFull(false)
	now := pattern(3, 100_000)
	if _, err := cl.Write(ctx, 1, chunk, 0, now, chunkSize); err != nil {
		t.Fatalf("a write once the disk has room: %v", err)
	}
	checkConverged(t, c)
}
