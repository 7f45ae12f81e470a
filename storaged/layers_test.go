package storaged_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/e2e/harness"
)

// A file that shares chunks with a layer reads the layer's bytes (cut at the
// layer's visible length) until it changes the chunk; its first write or
// truncate makes the chunk its own on every replica, the layer unchanged.
func TestLayerReadsAndCopyOnWrite(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, NoSync: true})
	cl := c.Client(5 * time.Second)
	const layer, file, other = 70, 71, 72
	base := pattern(1, 50_000)
	for i := uint64(0); i < 3; i++ {
		if _, err := cl.Write(ctx, 1, layout.MakeChunkID(layer, i), 0, base, chunkSize); err != nil {
			t.Fatal(err)
		}
	}
	via := func(i uint64, n uint32) []layout.LayerChunk {
		return []layout.LayerChunk{{Chunk: layout.MakeChunkID(file-10, i), Len: chunkSize}, {Chunk: layout.MakeChunkID(layer, i), Len: n}}
	}
	read := func(chunk layout.ChunkID, base []layout.LayerChunk) []byte {
		t.Helper()
		got, err := cl.Read(ctx, client.ReadIO{Chain: 1, Chunk: chunk, Length: chunkSize, Base: base}, false)
		if err != nil {
			t.Fatalf("read %v: %v", chunk, err)
		}
		return got
	}

	// Reads: through a missing first layer to the second, cut at 40 000.
	if got := read(layout.MakeChunkID(file, 0), via(0, 40_000)); !bytes.Equal(got, base[:40_000]) {
		t.Fatalf("read through the layer: %d bytes", len(got))
	}
	// No layer holds the chunk: not found, as any missing chunk.
	if _, err := cl.Read(ctx, client.ReadIO{Chain: 1, Chunk: layout.MakeChunkID(file, 5), Length: chunkSize, Base: via(5, chunkSize)}, false); !errors.Is(err, client.ErrChunkNotFound) {
		t.Fatalf("read of a chunk no layer holds: %v", err)
	}

	// A write in the middle: the layer's visible bytes with the write on top.
	if _, err := cl.Update(ctx, client.Update{Chain: 1, Chunk: layout.MakeChunkID(file, 0), Kind: storageapi.KindWrite, Offset: 100, Data: []byte("changed"), ChunkSize: chunkSize, Base: via(0, 40_000)}); err != nil {
		t.Fatal(err)
	}
	want0 := append([]byte{}, base[:40_000]...)
	copy(want0[100:], "changed")
	// A write past the visible bytes: zeros between.
	if _, err := cl.Update(ctx, client.Update{Chain: 1, Chunk: layout.MakeChunkID(file, 1), Kind: storageapi.KindWrite, Offset: 45_000, Data: []byte("tail"), ChunkSize: chunkSize, Base: via(1, 30_000)}); err != nil {
		t.Fatal(err)
	}
	want1 := append(append(append([]byte{}, base[:30_000]...), make([]byte, 15_000)...), "tail"...)
	// A truncate: cut below the visible bytes.
	if _, err := cl.Update(ctx, client.Update{Chain: 1, Chunk: layout.MakeChunkID(file, 2), Kind: storageapi.KindTruncate, Length: 1000, ChunkSize: chunkSize, Base: via(2, chunkSize)}); err != nil {
		t.Fatal(err)
	}
	want2 := base[:1000]
	for _, n := range servingNodes(c, 1) {
		for i, want := range [][]byte{want0, want1, want2} {
			got, err := replicaRead(t, c, n, 1, layout.MakeChunkID(file, uint64(i)), chunkSize)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("own chunk %d on %s: %d bytes (want %d), %v", i, c.Nodes[n].Name, len(got), len(want), err)
			}
			got, err = replicaRead(t, c, n, 1, layout.MakeChunkID(layer, uint64(i)), chunkSize)
			if err != nil || !bytes.Equal(got, base) {
				t.Fatalf("layer chunk %d on %s changed: %d bytes, %v", i, c.Nodes[n].Name, len(got), err)
			}
		}
	}
	// Owned now: later writes change the own chunk only, and reads no longer
	// fall back (a second write does not copy the layer again).
	if _, err := cl.Update(ctx, client.Update{Chain: 1, Chunk: layout.MakeChunkID(file, 0), Kind: storageapi.KindWrite, Offset: 0, Data: []byte("again"), ChunkSize: chunkSize, Base: via(0, 40_000)}); err != nil {
		t.Fatal(err)
	}
	copy(want0, "again")
	if got := read(layout.MakeChunkID(file, 0), via(0, 40_000)); !bytes.Equal(got, want0) {
		t.Fatalf("owned chunk read: %d bytes", len(got))
	}
	// Another file sharing the same layer still sees the layer.
	if got := read(layout.MakeChunkID(other, 0), via(0, chunkSize)); !bytes.Equal(got, base) {
		t.Fatalf("the other file's read: %d bytes", len(got))
	}
	// Junk: more layers than allowed is refused, not served.
	many := make([]layout.LayerChunk, layout.MaxLayers+1)
	if _, err := cl.Read(ctx, client.ReadIO{Chain: 1, Chunk: layout.MakeChunkID(other, 0), Length: 10, Base: many}, false); err == nil {
		t.Fatal("a read through too many layers was served")
	}
}
