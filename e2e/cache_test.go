package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/e2e/harness"
)

// readAll opens path on fs and reads it whole.
func readAll(t *testing.T, fs *client.FS, path string) []byte {
	t.Helper()
	ctx := context.Background()
	f, err := fs.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, f.Size())
	if n, err := f.ReadAtContext(ctx, b, 0); n != len(b) || (err != nil && n != len(b)) {
		t.Fatalf("read %s: %d of %d bytes: %v", path, n, len(b), err)
	}
	return b
}

// cachingClient starts a cluster and dials a client of it with a memory
// cache of size bytes; the cluster's own client has none.
func cachingClient(t *testing.T, size int64) (*harness.FSCluster, *client.FS) {
	t.Helper()
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 2, Replicas: 2, Chains: 2, NoSync: true}, ChunkSize: 256 << 10})
	fs, err := c.Dial("cached")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	fs.SetMemoryCache(size)
	return c, fs
}

// TestMemoryCache: a client with a memory cache serves a second read of a
// file from it; a rewrite by another client, closed before the next open, is
// read on that open (a new Gen misses); a write through the caching client
// itself is read back at once, even by a handle opened before it.
func TestMemoryCache(t *testing.T) {
	c, cached := cachingClient(t, 64<<20)
	ctx := context.Background()
	cached.SetInodeTTL(0) // path lookups every time: the test is about data
	other := c.FS()

	first := pattern(1<<20+100, 1)
	writeFile(t, other, "/f", first)
	if got := readAll(t, cached, "/f"); !bytes.Equal(got, first) {
		t.Fatal("first read differs")
	}
	s := cached.CacheStats().Memory
	if s.Hits != 0 || s.Misses != 17 || s.Used != int64(len(first)) {
		t.Fatalf("after the first read: %+v", s)
	}
	if got := readAll(t, cached, "/f"); !bytes.Equal(got, first) {
		t.Fatal("second read differs")
	}
	if s = cached.CacheStats().Memory; s.Hits != 17 {
		t.Fatalf("the second read was not served from the cache: %+v", s)
	}

	second := pattern(1<<20+100, 2)
	writeFile(t, other, "/f", second)
	if got := readAll(t, cached, "/f"); !bytes.Equal(got, second) {
		t.Fatal("after another client's rewrite, the caching client reads the old content")
	}

	// A handle opened before a write through the same client reads the write.
	old, err := cached.Open(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	buf := make([]byte, 4096)
	if _, err := old.ReadAtContext(ctx, buf, 0); err != nil || !bytes.Equal(buf, second[:4096]) {
		t.Fatalf("read before the write: %v", err)
	}
	w, err := cached.OpenFile(ctx, "/f", 1 /* O_WRONLY */, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("fresh"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := old.ReadAtContext(ctx, buf, 0); err != nil || string(buf[:5]) != "fresh" {
		t.Fatalf("after a write through this client, a handle of it reads %q (%v)", buf[:5], err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryCacheUnderLocalWrites: readers of a caching client never read
// a value older than the last write through that client that ended before
// their read began, while a writer keeps rewriting the block they read.
func TestMemoryCacheUnderLocalWrites(t *testing.T) {
	_, fs := cachingClient(t, 16<<20)
	ctx := context.Background()
	stamp := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	writeFile(t, fs, "/counter", append(stamp(0), make([]byte, 100<<10)...))
	w, err := fs.OpenFile(ctx, "/counter", 1 /* O_WRONLY */, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var done atomic.Uint64 // the last value whose write returned
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for v := uint64(1); ; v++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := w.WriteAt(stamp(v), 0); err != nil {
				t.Error(err)
				return
			}
			done.Store(v)
		}
	}()
	var reads atomic.Int64
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := fs.Open(ctx, "/counter")
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			buf := make([]byte, 8)
			for {
				select {
				case <-stop:
					return
				default:
				}
				floor := done.Load()
				if _, err := f.ReadAtContext(ctx, buf, 0); err != nil {
					t.Error(err)
					return
				}
				if got := binary.BigEndian.Uint64(buf); got < floor {
					t.Errorf("read %d after the write of %d had returned", got, floor)
					return
				}
				reads.Add(1)
			}
		}()
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%d writes, %d reads, cache %+v", done.Load(), reads.Load(), fs.CacheStats())
}

// TestDiskCache: a client with only a disk tier serves a second read from
// it; a new client over the same directory (a remount) serves from what the
// first left; a rewrite by another client is read on the next open; a
// second client cannot take a directory in use.
func TestDiskCache(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 2, Replicas: 2, Chains: 2, NoSync: true}, ChunkSize: 256 << 10})
	ctx := context.Background()
	dir := t.TempDir()
	dial := func(name string) *client.FS {
		fs, err := c.Dial(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fs.Close() })
		fs.SetInodeTTL(0)
		if err := fs.SetCache(ctx, client.CacheConfig{Dir: dir, DiskSize: 64 << 20}); err != nil {
			t.Fatal(err)
		}
		return fs
	}
	other := c.FS()
	first := pattern(1<<20+100, 1)
	writeFile(t, other, "/f", first)

	cached := dial("cached")
	if got := readAll(t, cached, "/f"); !bytes.Equal(got, first) {
		t.Fatal("first read differs")
	}
	cached.SyncCache()
	if s := cached.CacheStats().Disk; s.Misses != 17 || s.Used != int64(len(first))+regionHeaders(len(first)) {
		t.Fatalf("after the first read: %+v", s)
	}
	intruder, err := c.Dial("intruder")
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	if err := intruder.SetCache(ctx, client.CacheConfig{Dir: dir, DiskSize: 64 << 20}); err == nil {
		t.Fatal("a second client took the cache directory in use")
	}
	cached.Close()

	again := dial("again") // the remount
	if got := readAll(t, again, "/f"); !bytes.Equal(got, first) {
		t.Fatal("read after the remount differs")
	}
	if s := again.CacheStats().Disk; s.Hits != 17 || s.Misses != 0 {
		t.Fatalf("the read after the remount was not served from the disk tier: %+v", s)
	}
	second := pattern(1<<20+100, 2)
	writeFile(t, other, "/f", second)
	if got := readAll(t, again, "/f"); !bytes.Equal(got, second) {
		t.Fatal("after another client's rewrite, the caching client reads the old content")
	}
}

// regionHeaders is the disk tier's header bytes for a file of n bytes read
// whole (one 4 KiB header per 4 MiB region).
func regionHeaders(n int) int64 { return int64((n+4<<20-1)/(4<<20)) * 4096 }

// TestPrefetch: FS.Prefetch fills the cache with a tree (a later read of it
// misses nothing), says what was cached already, counts what it could not
// read, and refuses a client without a cache.
func TestPrefetch(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 2, Replicas: 2, Chains: 2, NoSync: true}, ChunkSize: 256 << 10})
	ctx := context.Background()
	other := c.FS()
	files := map[string][]byte{"/data/a": pattern(5<<20+7, 1), "/data/sub/b": pattern(100, 2), "/data/sub/empty": nil}
	if err := other.MkdirAll(ctx, "/data/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	var total int64
	for p, b := range files {
		writeFile(t, other, p, b)
		total += int64(len(b))
	}
	if _, err := other.Prefetch(ctx, []string{"/data"}, client.PrefetchOptions{}); !errors.Is(err, client.ErrNoCache) {
		t.Fatalf("a client without a cache: %v", err)
	}

	fs, err := c.Dial("loader")
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	if err := fs.SetCache(ctx, client.CacheConfig{Dir: t.TempDir(), DiskSize: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	progressed := 0
	sum, err := fs.Prefetch(ctx, []string{"/data", "/missing"}, client.PrefetchOptions{Threads: 3, Progress: func(client.PrefetchSummary) { progressed++ }})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 3 || sum.Bytes != total || sum.Fetched != total || sum.Failed != 1 || progressed == 0 {
		t.Fatalf("first prefetch: %+v (%d progress calls)", sum, progressed)
	}
	if sum, err = fs.Prefetch(ctx, []string{"/data"}, client.PrefetchOptions{}); err != nil || sum.Fetched != 0 || sum.Bytes != total {
		t.Fatalf("second prefetch fetched again: %+v %v", sum, err)
	}
	before := fs.CacheStats().Disk
	for p, want := range files {
		if got := readAll(t, fs, p); !bytes.Equal(got, want) {
			t.Fatalf("%s differs", p)
		}
	}
	if s := fs.CacheStats().Disk; s.Misses != before.Misses || s.Hits == before.Hits {
		t.Fatalf("reads after the prefetch missed the cache: before %+v after %+v", before, s)
	}
}
