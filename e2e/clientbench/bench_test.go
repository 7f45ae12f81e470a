package clientbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/e2e/harness"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchMode is one data-path configuration under test.
type benchMode struct {
	name  string
	apply func(fs *client.FS)
}

var benchModes = []benchMode{
	{"fixed 8, no hedge", func(fs *client.FS) {
		fs.Chunks().SetWindow(client.NewWindow(client.WindowConfig{Fixed: true, Start: 8}))
		fs.Chunks().SetHedging(client.HedgeConfig{Off: true})
	}},
	{"adaptive + hedge", func(fs *client.FS) {
		fs.Chunks().SetWindow(nil)
		fs.Chunks().SetHedging(client.HedgeConfig{})
	}},
}

type benchRow struct {
	replicas            int
	mode                string
	writeMBs, readMBs   float64
	writersMBs          float64
	randOps             float64
	window              client.WindowStats
	hedges, hedgeWins   uint64
	writeTime, readTime time.Duration
}

// TestClientBench measures core/client's data path through a whole
// in-process file system (3 storage nodes, 6 chains, fsyncs on): a
// sequential write then read of one file, 8 writers at once (a checkpoint
// burst), and 16 random 4 KiB readers, with the old fixed window of 8 and
// with the adaptive window and hedging, side by side. Run with
// FLYFS_BENCH=1; FLYFS_BENCH_MB (default 1024) sets the file size,
// FLYFS_BENCH_BUF_MB (32) the size of each WriteAt/ReadAt, FLYFS_BENCH_SECS
// (5) the random-read time.
func TestClientBench(t *testing.T) {
	if os.Getenv("FLYFS_BENCH") != "1" {
		t.Skip("set FLYFS_BENCH=1 to run the client data-path benchmark")
	}
	size := envInt("FLYFS_BENCH_MB", 1024) << 20
	buf := envInt("FLYFS_BENCH_BUF_MB", 32) << 20
	secs := time.Duration(envInt("FLYFS_BENCH_SECS", 5)) * time.Second
	var rows []benchRow
	for _, replicas := range []int{1, 3} {
		for _, m := range benchModes {
			// A fresh cluster per run: no earlier run's data or GC in the way.
			t.Run(fmt.Sprintf("r%d/%s", replicas, m.name), func(t *testing.T) {
				c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 3, Replicas: replicas, Chains: 6, NoSync: false}})
				fs := c.FS()
				m.apply(fs)
				rows = append(rows, runBench(t, fs, replicas, m.name, size, buf, secs))
			})
		}
	}
	fmt.Printf("\ncore/client data path: %d MiB file, %d MiB per call, 3 nodes, 6 chains, 1 MiB chunks, fsync on, %d cores\n",
		size>>20, buf>>20, runtimeCPUs())
	fmt.Printf("%-3s %-18s %10s %10s %12s %14s  %s\n", "rep", "mode", "write MB/s", "read MB/s", "8 wr MB/s", "rand 4K op/s", "window (limit/peak/cuts) hedges/won")
	for _, r := range rows {
		fmt.Printf("%-3d %-18s %10.0f %10.0f %12.0f %14.0f  %d/%d/%d %d/%d\n", r.replicas, r.mode, r.writeMBs, r.readMBs, r.writersMBs, r.randOps,
			r.window.Limit, r.window.Peak, r.window.Cuts, r.hedges, r.hedgeWins)
	}
}

func runtimeCPUs() int { return numCPU }

func runBench(t *testing.T, fs *client.FS, replicas int, mode string, size, bufSize int, secs time.Duration) benchRow {
	ctx := context.Background()
	row := benchRow{replicas: replicas, mode: mode}
	name := fmt.Sprintf("/seq-%d-%d", replicas, time.Now().UnixNano())
	buf := make([]byte, bufSize)
	for i := range buf {
		buf[i] = byte(i * 131)
	}
	before := fs.IOStats()

	f, err := fs.Create(ctx, name, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for off := 0; off < size; off += bufSize {
		n := min(bufSize, size-off)
		if _, err := f.WriteAt(buf[:n], int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	row.writeTime = time.Since(start)
	row.writeMBs = float64(size) / 1e6 / row.writeTime.Seconds()

	r, err := fs.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	for off := 0; off < size; off += bufSize {
		n := min(bufSize, size-off)
		if got, err := r.ReadAt(buf[:n], int64(off)); got != n {
			t.Fatalf("read at %d: %d, %v", off, got, err)
		}
	}
	row.readTime = time.Since(start)
	row.readMBs = float64(size) / 1e6 / row.readTime.Seconds()

	// 8 writers at once, each an eighth of the size, all through this FS.
	var wg sync.WaitGroup
	part := max(size/8, bufSize)
	start = time.Now()
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wf, err := fs.Create(ctx, fmt.Sprintf("%s.w%d", name, w), 0o644)
			if err != nil {
				errs <- err
				return
			}
			for off := 0; off < part; off += bufSize {
				if _, err := wf.WriteAt(buf[:min(bufSize, part-off)], int64(off)); err != nil {
					errs <- err
					return
				}
			}
			errs <- wf.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	row.writersMBs = float64(8*part) / 1e6 / time.Since(start).Seconds()

	// 16 random 4 KiB readers of the big file.
	var ops atomic.Int64
	stop := time.Now().Add(secs)
	start = time.Now()
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			b := make([]byte, 4096)
			for time.Now().Before(stop) {
				off := rng.IntN(size/4096) * 4096
				if n, err := r.ReadAt(b, int64(off)); n != len(b) {
					t.Errorf("random read at %d: %d %v", off, n, err)
					return
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	row.randOps = float64(ops.Load()) / time.Since(start).Seconds()

	st := fs.IOStats()
	row.window = st.Window
	row.hedges, row.hedgeWins = st.Hedges-before.Hedges, st.HedgeWins-before.HedgeWins
	return row
}
