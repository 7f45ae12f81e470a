package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/e2e/harness"
)

// failAfter is a writer that takes n bytes and then fails.
type failAfter struct {
	n   int
	got bytes.Buffer
}

var errWriterGone = errors.New("writer gone")

func (w *failAfter) Write(p []byte) (int, error) {
	if w.got.Len()+len(p) > w.n {
		k := w.n - w.got.Len()
		w.got.Write(p[:k])
		return k, errWriterGone
	}
	return w.got.Write(p)
}

// TestStreamTo: a streamed range is the bytes ReadAt gives for it, holes
// as zeros, from inside a chunk to inside another, through many chunks more
// than the read-ahead holds, with and without the client's cache; a range
// past the end is streamed to the end and then fails; a writer's error ends
// the stream with that error.
func TestStreamTo(t *testing.T) {
	const chunk = 64 << 10
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 2, Replicas: 2, Chains: 2, NoSync: true}, ChunkSize: chunk})
	ctx := context.Background()
	fs := c.FS()

	// 40 chunks: written from chunk 3 on, with chunks 10..12 never written
	// and the last one short.
	const size = 40*chunk - 1000
	want := make([]byte, size)
	copy(want[3*chunk:10*chunk], pattern(7*chunk, 1))
	copy(want[13*chunk:], pattern(size-13*chunk, 2))
	f, err := fs.Create(ctx, "/s", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{3 * chunk, 10 * chunk}, {13 * chunk, size}} {
		if _, err := f.WriteAt(want[r[0]:r[1]], int64(r[0])); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	cached, err := c.Dial("cached")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cached.Close() })
	cached.SetMemoryCache(8 << 20)

	for _, side := range []struct {
		name string
		fs   *client.FS
	}{{"direct", fs}, {"cached", cached}} {
		r, err := side.fs.Open(ctx, "/s")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			off, n int64
		}{
			{"whole", 0, size},
			{"mid-chunk to mid-chunk", chunk/2 + 3, 30*chunk + 17},
			{"across the hole", 9*chunk + 5, 5 * chunk},
			{"small", 5*chunk - 10, 100},
			{"empty", 7, 0},
		} {
			var got bytes.Buffer
			n, err := r.StreamTo(ctx, &got, tc.off, tc.n)
			if err != nil || n != tc.n {
				t.Fatalf("%s %s: %d of %d bytes: %v", side.name, tc.name, n, tc.n, err)
			}
			if !bytes.Equal(got.Bytes(), want[tc.off:tc.off+tc.n]) {
				t.Fatalf("%s %s: streamed bytes differ", side.name, tc.name)
			}
		}

		var got bytes.Buffer
		n, err := r.StreamTo(ctx, &got, size-3*chunk, 4*chunk)
		if !errors.Is(err, io.ErrUnexpectedEOF) || n != 3*chunk || !bytes.Equal(got.Bytes(), want[size-3*chunk:]) {
			t.Fatalf("%s past the end: %d bytes, %v; want %d and ErrUnexpectedEOF", side.name, n, err, 3*chunk)
		}

		w := &failAfter{n: 5*chunk + 9}
		n, err = r.StreamTo(ctx, w, 0, size)
		if !errors.Is(err, errWriterGone) || n != int64(w.n) || !bytes.Equal(w.got.Bytes(), want[:w.n]) {
			t.Fatalf("%s failing writer: %d bytes, %v; want %d and its error", side.name, n, err, w.n)
		}

		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := r.StreamTo(canceled, io.Discard, 0, size); err == nil {
			t.Fatalf("%s: a stream under a canceled context succeeded", side.name)
		}
		r.Close()
	}
}
