// The client's data path over a real in-process cluster: the adaptive in-flight
// window, hedged reads, batched small reads, reads racing writes.

package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/e2e/harness"
)

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7+i>>9) ^ seed
	}
	return b
}

// writeFile creates path with data and closes it.
func writeFile(t *testing.T, fs *client.FS, path string, data []byte) {
	t.Helper()
	ctx := context.Background()
	f, err := fs.Create(ctx, path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestHedgedReadsAvoidASlowReplica slows every request the client sends to
// one of three storage nodes; reads that first go there are hedged to
// another replica, and come back correct.
func TestHedgedReadsAvoidASlowReplica(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 3, Replicas: 3, Chains: 3, NoSync: true}, ChunkSize: 64 << 10})
	fs := c.FS()
	ctx := context.Background()
	data := pattern(3<<20, 1)
	writeFile(t, fs, "/hedge", data)
	f, err := fs.Open(ctx, "/hedge")
	if err != nil {
		t.Fatal(err)
	}
	c.Net.Delay("client", "n2", 300*time.Millisecond)
	defer c.Net.Delay("client", "n2", 0)

	before := fs.IOStats()
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 4096)
	start := time.Now()
	const reads = 60
	for range reads {
		off := rng.IntN(len(data) - len(buf))
		if n, err := f.ReadAt(buf, int64(off)); err != nil || n != len(buf) || !bytes.Equal(buf, data[off:off+len(buf)]) {
			t.Fatalf("read at %d: %d, %v, equal %v", off, n, err, bytes.Equal(buf, data[off:off+len(buf)]))
		}
	}
	st := fs.IOStats()
	t.Logf("%d reads with one replica 300 ms away: %v; hedges %d, won by the hedge %d, threshold class 0 now",
		reads, time.Since(start), st.Hedges-before.Hedges, st.HedgeWins-before.HedgeWins)
	if st.Hedges == before.Hedges || st.HedgeWins == before.HedgeWins {
		t.Fatalf("no read was hedged (hedges %d, wins %d) though a replica answers after 300 ms", st.Hedges-before.Hedges, st.HedgeWins-before.HedgeWins)
	}

	// Batched reads: a node's batch is hedged as a whole onto the others.
	before = fs.IOStats()
	reqs := make([]client.ReadReq, 100)
	for i := range reqs {
		reqs[i] = client.ReadReq{Off: int64(rng.IntN(len(data) - 4096)), Buf: make([]byte, 4096)}
	}
	for range 3 {
		if err := f.ReadV(ctx, reqs); err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			if r.N != 4096 || !bytes.Equal(r.Buf, data[r.Off:r.Off+4096]) {
				t.Fatalf("ReadV at %d: %d bytes, equal %v", r.Off, r.N, bytes.Equal(r.Buf, data[r.Off:r.Off+4096]))
			}
		}
	}
	st = fs.IOStats()
	if st.Hedges == before.Hedges {
		t.Fatalf("batched reads to the slow node were not hedged")
	}
	t.Logf("ReadV: hedges %d, wins %d, batch RPCs %d carrying %d IOs", st.Hedges-before.Hedges, st.HedgeWins-before.HedgeWins,
		st.BatchRPCs-before.BatchRPCs, st.BatchedIOs-before.BatchedIOs)
}

// TestReadVAndSmallPiecesAreBatched reads many small ranges at once and a
// range over many small chunks: pieces on one storage node share an RPC.
func TestReadVAndSmallPiecesAreBatched(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 3, Replicas: 2, Chains: 6, NoSync: true}, ChunkSize: 64 << 10})
	fs := c.FS()
	// RPCs are counted below: no hedge may add one (on a loaded machine a
	// slow answer is hedged, and the hedge is a second batch RPC).
	fs.Chunks().SetHedging(client.HedgeConfig{Off: true})
	ctx := context.Background()
	data := pattern(2<<20+333, 2)
	writeFile(t, fs, "/small", data)
	// A sparse region: a hole between two written ranges.
	sp, err := fs.Create(ctx, "/sparse", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.WriteAt([]byte("head"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.WriteAt([]byte("tail"), 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open(ctx, "/small")
	if err != nil {
		t.Fatal(err)
	}

	// One ReadAt over 8 chunks of 64 KiB: batched per node.
	before := fs.IOStats()
	got := make([]byte, 448<<10)
	if n, err := f.ReadAt(got, 5000); err != nil || n != len(got) || !bytes.Equal(got, data[5000:5000+len(got)]) {
		t.Fatalf("ReadAt over 8 pieces: %d %v", n, err)
	}
	st := fs.IOStats()
	rpcs, ios := st.BatchRPCs-before.BatchRPCs, st.BatchedIOs-before.BatchedIOs
	if rpcs == 0 || rpcs > 3 || ios < 6 {
		t.Fatalf("a read of 8 small pieces over 3 nodes took %d batch RPCs carrying %d IOs, want <=3 carrying about 8", rpcs, ios)
	}

	// ReadV: many small reads, across the end of the file and its chunks.
	rng := rand.New(rand.NewPCG(3, 4))
	reqs := make([]client.ReadReq, 0, 300)
	for range 295 {
		n := 1 + rng.IntN(9000)
		reqs = append(reqs, client.ReadReq{Off: int64(rng.IntN(len(data) - n)), Buf: make([]byte, n)})
	}
	reqs = append(reqs,
		client.ReadReq{Off: int64(len(data) - 100), Buf: make([]byte, 4096)}, // short at EOF
		client.ReadReq{Off: int64(len(data) + 10), Buf: make([]byte, 10)},    // past EOF
		client.ReadReq{Off: 64<<10 - 10, Buf: make([]byte, 20)},              // over a chunk boundary
		client.ReadReq{Off: 0, Buf: nil},
		client.ReadReq{Off: 1 << 20, Buf: make([]byte, 300<<10)}, // five pieces
	)
	before = fs.IOStats()
	if err := f.ReadV(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		want := data[min(int(r.Off), len(data)):min(int(r.Off)+len(r.Buf), len(data))]
		if r.N != len(want) || !bytes.Equal(r.Buf[:r.N], want) {
			t.Fatalf("ReadV request %d at %d: N %d want %d, equal %v", i, r.Off, r.N, len(want), bytes.Equal(r.Buf[:r.N], want))
		}
	}
	st = fs.IOStats()
	rpcs, ios = st.BatchRPCs-before.BatchRPCs, st.BatchedIOs-before.BatchedIOs
	t.Logf("ReadV of %d ranges: %d batch RPCs carrying %d IOs", len(reqs), rpcs, ios)
	if rpcs == 0 || ios < 295 || rpcs > ios/20 {
		t.Fatalf("ReadV of ~300 small ranges: %d batch RPCs carrying %d IOs", rpcs, ios)
	}
	if err := f.ReadV(ctx, []client.ReadReq{{Off: -1, Buf: make([]byte, 1)}}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("negative offset: %v", err)
	}

	// Holes read as zeros, through ReadV and through a batched ReadAt.
	s, err := fs.Open(ctx, "/sparse")
	if err != nil {
		t.Fatal(err)
	}
	hole := []client.ReadReq{{Off: 0, Buf: make([]byte, 8)}, {Off: 500 << 10, Buf: bytes.Repeat([]byte{9}, 100)}, {Off: 1<<20 - 2, Buf: make([]byte, 6)}}
	if err := s.ReadV(ctx, hole); err != nil {
		t.Fatal(err)
	}
	if string(hole[0].Buf) != "head\x00\x00\x00\x00" || !bytes.Equal(hole[1].Buf, make([]byte, 100)) || string(hole[2].Buf) != "\x00\x00tail" {
		t.Fatalf("holes: %q %v %q", hole[0].Buf, hole[1].Buf[:8], hole[2].Buf)
	}
	all := make([]byte, 1<<20+100)
	if n, err := s.ReadAt(all, 0); n != 1<<20+4 || err != io.EOF || string(all[:4]) != "head" || string(all[1<<20:1<<20+4]) != "tail" || !bytes.Equal(all[4:1<<20], make([]byte, 1<<20-4)) {
		t.Fatalf("sparse ReadAt: %d %v", n, err)
	}
}

// TestReadRacingWriteSeesOldOrNew overwrites one chunk again and again while
// readers read it: each read returns one whole version, never an error
// (a reader that meets the chunk mid-update retries).
func TestReadRacingWriteSeesOldOrNew(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 3, Replicas: 3, Chains: 2, NoSync: true}, ChunkSize: 64 << 10})
	fs := c.FS()
	ctx := context.Background()
	f, err := fs.Create(ctx, "/race", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	const size = 64 << 10
	if _, err := f.WriteAt(bytes.Repeat([]byte{0}, size), 0); err != nil {
		t.Fatal(err)
	}
	var written atomic.Int64 // the newest version whose write started
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, size)
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Half the readers read a part of the chunk.
				b := buf
				if r%2 == 1 {
					b = buf[1000:5000]
				}
				n, err := f.ReadAt(b, int64(size-len(b)))
				if err != nil || n != len(b) {
					errs <- err
					return
				}
				v := b[0]
				if int64(v) > written.Load() { // stored before each write starts
					errs <- errors.New("read a version not yet written")
					return
				}
				for _, x := range b {
					if x != v {
						errs <- errors.New("read mixes two versions of a chunk")
						return
					}
				}
				reads.Add(1)
			}
		}()
	}
	before := fs.IOStats()
	for v := 1; v <= 150; v++ {
		written.Store(int64(v))
		if _, err := f.WriteAt(bytes.Repeat([]byte{byte(v)}, size), 0); err != nil {
			t.Fatal(err)
		}
		if fs.IOStats().NotCommitted > before.NotCommitted && v >= 60 {
			break
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("reader: %v", err)
	default:
	}
	st := fs.IOStats()
	t.Logf("%d reads raced the writes; %d met the chunk mid-update and were retried (%d retries in all)",
		reads.Load(), st.NotCommitted-before.NotCommitted, st.Retries-before.Retries)
	if reads.Load() == 0 {
		t.Fatal("no read ran")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWindowIsSharedByWriters runs many writers through one FS with a small
// adaptive window: the pieces in flight never exceed its ceiling, however
// many files write at once, and the data is intact.
func TestWindowIsSharedByWriters(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 3, Replicas: 2, Chains: 6, NoSync: true}, ChunkSize: 64 << 10})
	fs := c.FS()
	ctx := context.Background()
	fs.Chunks().SetWindow(client.NewWindow(client.WindowConfig{Min: 2, Max: 12, Start: 4}))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := pattern(2<<20, byte(w))
			name := "/w" + string(rune('a'+w))
			f, err := fs.Create(ctx, name, 0o644)
			if err != nil {
				errs <- err
				return
			}
			if _, err := f.WriteAt(data, 0); err != nil { // 32 pieces at once
				errs <- err
				return
			}
			if err := f.Close(); err != nil {
				errs <- err
				return
			}
			r, err := fs.Open(ctx, name)
			if err != nil {
				errs <- err
				return
			}
			got := make([]byte, len(data))
			if n, err := r.ReadAt(got, 0); n != len(data) || (err != nil && err != io.EOF) || !bytes.Equal(got, data) {
				errs <- errors.New(name + ": data differs")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := fs.IOStats().Window
	t.Logf("window after 8 writers: %+v", st)
	if st.Peak > 12 || st.InFlight != 0 {
		t.Fatalf("8 writers of 32 pieces each: %d pieces in flight at the peak, ceiling 12 (in flight now %d)", st.Peak, st.InFlight)
	}
	if st.Waits == 0 || st.Grows == 0 {
		t.Fatalf("the window neither made anyone wait nor grew: %+v", st)
	}
}

// A file opened by inode (as the gateway and the console open theirs) has
// no path: closing it must not cache it under one (it was cached as "/",
// so the shared client of flyfs server took the root for a file for a
// second after every S3 PUT).
func TestCloseOfAFileOpenedByInodeCachesNoPath(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{})
	fs := c.FS()
	ctx := context.Background()
	root, err := fs.Stat(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	in, session, _, err := fs.Meta().Create(ctx, root.ID, "by-inode", 0o644, os.O_CREATE|os.O_WRONLY, client.Creds{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fs.OpenInode(ctx, in, session)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := fs.Stat(ctx, "/"); err != nil || got.Type != metaapi.TypeDir {
		t.Fatalf("the root after closing a file opened by inode: %+v, %v", got, err)
	}
}
