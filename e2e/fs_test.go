package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/metad"
	"github.com/flyfs/flyfs/metad/ns"
)

// TestFileWriteReadThroughTheCluster writes a multi-chunk file through the
// client (metad for the namespace, CRAQ chains for the data), reads it back
// through a fresh open, and checks holes, listing, rename and remove.
func TestFileWriteReadThroughTheCluster(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterConfig{Nodes: 3, Chains: 4, T: time.Second, NoSync: true})
	ctx := context.Background()
	rc := c.RPCClient("client")
	src, err := client.NewMgmtdSource(ctx, c.MgmtdAddrs(), rc, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m, err := metad.New(metad.Config{KV: memkv.Open(kv.Options{}), Routing: src, DefaultChunkSize: 1 << 20, DefaultStripe: 4})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go m.Serve(l)
	defer m.Close()
	fs := client.NewFS(src, rc, []string{l.Addr().String()}, client.NewChunkIO(src, rc, 10*time.Second))

	if err := fs.Mkdir(ctx, "/ckpt", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create(ctx, "/ckpt/model.bin", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 5<<20+12345) // spans 6 chunks of 1 MiB over a stripe of 4
	for i := range data {
		data[i] = byte(i*31 + i>>12)
	}
	// Write in uneven pieces, out of order.
	for _, span := range [][2]int{{3 << 20, len(data)}, {0, 777}, {777, 3 << 20}} {
		if _, err := f.WriteAt(data[span[0]:span[1]], int64(span[0])); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := fs.Stat(ctx, "/ckpt/model.bin"); err != nil || st.Length != uint64(len(data)) {
		t.Fatalf("stat after close: length %d, %v", st.Length, err)
	}
	r, err := fs.Open(ctx, "/ckpt/model.bin")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data)+100)
	n, err := r.ReadAt(got, 0)
	if n != len(data) || err != io.EOF || !bytes.Equal(got[:n], data) {
		t.Fatalf("read back %d bytes (%v), equal %v", n, err, bytes.Equal(got[:n], data))
	}
	// A sparse file: a write far out leaves a hole that reads as zeros.
	sp, err := fs.Create(ctx, "/ckpt/sparse", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.WriteAt([]byte("tail"), 3<<20+5); err != nil {
		t.Fatal(err)
	}
	sp.Close()
	r2, _ := fs.Open(ctx, "/ckpt/sparse")
	buf := make([]byte, 3<<20+9)
	if n, err := r2.ReadAt(buf, 0); n != len(buf) || (err != nil && err != io.EOF) || !bytes.Equal(buf[:3<<20+5], make([]byte, 3<<20+5)) || string(buf[3<<20+5:]) != "tail" {
		t.Fatalf("sparse read: %d %v", n, err)
	}
	if err := fs.Rename(ctx, "/ckpt/model.bin", "/ckpt/model-final.bin"); err != nil {
		t.Fatal(err)
	}
	ents, err := fs.ReadDir(ctx, "/ckpt")
	if err != nil || len(ents) != 2 || ents[0].Name != "model-final.bin" || ents[1].Name != "sparse" {
		t.Fatalf("listing: %+v %v", ents, err)
	}
	if err := fs.Remove(ctx, "/ckpt"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("remove of a non-empty directory: %v", err)
	}
	if _, err := fs.Open(ctx, "/ckpt/model.bin"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("open of the old name: %v", err)
	}

	// The inode cache: this client sees its own changes at once; another
	// client sees them within its TTL; Open always asks metad.
	other := client.NewFS(src, rc, []string{l.Addr().String()}, client.NewChunkIO(src, rc, 10*time.Second))
	other.SetInodeTTL(200 * time.Millisecond)
	if _, err := other.Stat(ctx, "/ckpt/sparse"); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(ctx, "/ckpt/sparse"); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(ctx, "/ckpt/sparse"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("own removal not seen at once: %v", err)
	}
	if _, err := other.Open(ctx, "/ckpt/sparse"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("open by another client after a removal: %v", err)
	}
	time.Sleep(250 * time.Millisecond)
	if _, err := other.Stat(ctx, "/ckpt/sparse"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("another client still sees a removed file after its TTL: %v", err)
	}
}

// TestRemovedFilesChunksAreReclaimed: after a file is removed (and its grace
// period passes), metad's GC deletes its chunks from every chain.
func TestRemovedFilesChunksAreReclaimed(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterConfig{Nodes: 3, Chains: 4, T: time.Second, NoSync: true})
	ctx := context.Background()
	rc := c.RPCClient("client")
	src, err := client.NewMgmtdSource(ctx, c.MgmtdAddrs(), rc, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m, err := metad.New(metad.Config{KV: memkv.Open(kv.Options{}), Routing: src, Storage: rc, GCInterval: 50 * time.Millisecond,
		Namespace: ns.Options{GCGrace: -1}, DefaultChunkSize: 1 << 20, DefaultStripe: 4})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go m.Serve(l)
	defer m.Close()
	fs := client.NewFS(src, rc, []string{l.Addr().String()}, client.NewChunkIO(src, rc, 10*time.Second))
	f, err := fs.Create(ctx, "/tmpfile", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{7}, 3<<20+100), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ino := f.Inode().ID
	chunksOnStorage := func() int {
		begin, end := layout.InodeChunks(ino)
		api := storageapi.Client{RPC: rc}
		n := 0
		for _, node := range c.Nodes {
			for chain := uint32(1); chain <= 4; chain++ {
				resp, err := api.DumpChunkMeta(ctx, node.Addr, &storageapi.ChunkRange{Chain: chain, Begin: begin, End: end})
				if err == nil {
					n += len(resp.Metas)
				}
			}
		}
		return n
	}
	// 4 chunks, 3 replicas each, once every replica serves: on this loaded
	// machine a node can miss its heartbeats and be synced back.
	deadline := time.Now().Add(30 * time.Second)
	for c.WaitHealthy(30 * time.Second); chunksOnStorage() != 4*3 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if n := chunksOnStorage(); n != 4*3 {
		t.Fatalf("%d chunk replicas on storage before the removal, want 12", n)
	}
	if err := fs.Remove(ctx, "/tmpfile"); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for chunksOnStorage() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := chunksOnStorage(); n != 0 {
		t.Fatalf("%d chunk replicas of the removed file are still on storage", n)
	}
	if q, err := m.Namespace().GCQueueLength(ctx); err != nil || q != 0 {
		t.Fatalf("gc queue: %d %v", q, err)
	}
}
