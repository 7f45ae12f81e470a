package storaged_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/e2e/harness"
)

// TestBatchReadClosesUpShortResults: a batch read large enough to be read
// several IOs at once answers each IO in order, and its payload holds the
// results back to back: a chunk that ends early, one that is absent (its
// own error, no bytes), whole chunks around them; the same whether the
// reads go through the page cache or past it (NoCache).
func TestBatchReadClosesUpShortResults(t *testing.T) {
	for _, noCache := range []bool{false, true} {
		t.Run(map[bool]string{false: "cached", true: "no cache"}[noCache], func(t *testing.T) {
			testBatchReadPacking(t, noCache)
		})
	}
}

func testBatchReadPacking(t *testing.T, noCache bool) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 1, Chains: 1, NoSync: true})
	cl := c.Client(10 * time.Second)
	chunk := func(i uint64) layout.ChunkID { return layout.MakeChunkID(7, i) }
	sizes := []int{300_000, chunkSize, 0, chunkSize, 5} // 0: never written
	var want [][]byte
	for i, n := range sizes {
		data := pattern(uint64(40+i), n)
		if n > 0 {
			if _, err := cl.Write(ctx, 1, chunk(uint64(i)), 0, data, chunkSize); err != nil {
				t.Fatal(err)
			}
		}
		want = append(want, data)
	}
	ch, _ := c.Routing.Current().Chain(1)
	req := &storageapi.BatchReadReq{NoCache: noCache}
	for i := range sizes {
		req.IOs = append(req.IOs, storageapi.ReadIO{Key: storageapi.Key{Chain: 1, ChainVer: ch.Version, Chunk: chunk(uint64(i))}, Length: chunkSize})
	}
	api := storageapi.Client{RPC: c.RPCClient("client")}
	resp, data, err := api.BatchRead(ctx, c.Nodes[0].Addr, req)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for i, r := range resp.Results {
		if sizes[i] == 0 {
			if r.Err() == nil {
				t.Errorf("IO %d: an absent chunk read without error", i)
			}
			continue
		}
		if err := r.Err(); err != nil || int(r.Len) != sizes[i] {
			t.Fatalf("IO %d: %d bytes, %v; want %d", i, r.Len, err, sizes[i])
		}
		if !bytes.Equal(data[off:off+int(r.Len)], want[i]) {
			t.Fatalf("IO %d: its bytes are not at %d in the payload", i, off)
		}
		off += int(r.Len)
	}
	if off != len(data) {
		t.Fatalf("payload of %d bytes, results say %d", len(data), off)
	}
}
