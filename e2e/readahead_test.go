package e2e

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/e2e/harness"
)

// TestReadAhead: a read-only File read sequentially (in order, or as a
// kernel sends read-ahead: several at once, out of order) fetches blocks
// ahead and returns the file's bytes; random reads take the plain path;
// what was fetched is let go at close; Invalidate drops what was fetched
// before a write, so the next read sees the write.
func TestReadAhead(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 3, Replicas: 2, Chains: 3, NoSync: true}, ChunkSize: 1 << 20})
	fs := c.FS()
	ctx := context.Background()
	data := make([]byte, 24<<20+12345)
	rand.NewChaCha8([32]byte{1, 2}).Read(data)
	writeFile(t, fs, "/ra", data)

	check := func(name string, read func(f *client.File) []byte) {
		t.Helper()
		before := fs.IOStats().AheadBlocks
		f, err := fs.Open(ctx, "/ra")
		if err != nil {
			t.Fatal(err)
		}
		got := read(f)
		if !bytes.Equal(got, data) {
			t.Fatalf("%s: the bytes read differ from the file's", name)
		}
		f.Close()
		st := fs.IOStats()
		t.Logf("%s: %d blocks read ahead", name, st.AheadBlocks-before)
		if st.AheadBlocks == before {
			t.Errorf("%s: nothing was read ahead", name)
		}
		if st.AheadHeldBytes != 0 {
			t.Errorf("%s: %d bytes read ahead still held after close", name, st.AheadHeldBytes)
		}
	}
	check("in order, 256 KiB reads", func(f *client.File) []byte {
		out := make([]byte, len(data))
		for off := 0; off < len(data); off += 256 << 10 {
			if _, err := f.ReadAt(out[off:min(off+256<<10, len(data))], int64(off)); err != nil && err != io.EOF {
				t.Fatal(err)
			}
		}
		return out
	})
	check("as kernel read-ahead, 4 at once", func(f *client.File) []byte {
		out := make([]byte, len(data))
		const piece = 1 << 20
		for off := 0; off < len(data); off += 4 * piece {
			var wg sync.WaitGroup
			for k := 3; k >= 0; k-- { // the last first: out of order
				lo := off + k*piece
				if lo >= len(data) {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := f.ReadAt(out[lo:min(lo+piece, len(data))], int64(lo)); err != nil && err != io.EOF {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
		}
		return out
	})

	// Random reads: right bytes, nothing fetched ahead.
	f, err := fs.Open(ctx, "/ra")
	if err != nil {
		t.Fatal(err)
	}
	before := fs.IOStats().AheadBlocks
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200; i++ {
		off := rng.IntN(len(data) - 4096)
		buf := make([]byte, 4096)
		if _, err := f.ReadAt(buf, int64(off)); err != nil || !bytes.Equal(buf, data[off:off+4096]) {
			t.Fatalf("random read at %d: %v", off, err)
		}
	}
	if n := fs.IOStats().AheadBlocks - before; n != 0 {
		t.Errorf("random reads fetched %d blocks ahead", n)
	}
	f.Close()

	// A write after the reader fetched ahead: Invalidate, and the next read
	// sees it.
	r, err := fs.Open(ctx, "/ra")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 1<<20)
	for off := 0; off < 4<<20; off += 1 << 20 {
		if _, err := r.ReadAt(buf, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := fs.OpenFile(ctx, "/ra", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	patch := bytes.Repeat([]byte("new!"), 1<<18)
	if _, err := w.WriteAt(patch, 5<<20); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r.Invalidate()
	for off := 4 << 20; off < 6<<20; off += 1 << 20 {
		if _, err := r.ReadAt(buf, int64(off)); err != nil {
			t.Fatal(err)
		}
		want := data[off : off+1<<20]
		if off == 5<<20 {
			want = patch
		}
		if !bytes.Equal(buf, want) {
			t.Fatalf("after the write and Invalidate, the read at %d MiB returns old bytes", off>>20)
		}
	}
}
