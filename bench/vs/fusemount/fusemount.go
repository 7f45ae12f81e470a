// Package fusemount measures the flyfs FUSE mount and the native API in one
// run, next to go-fuse's loopback file system over a local directory (the
// FUSE ceiling of the machine) and the local directory itself: `flyfs bench
// fuse`. The cluster is in-process: one storage node, replication 1, real
// Pebble and chunk engines.
package fusemount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/cluster/frontend"
	"github.com/flyfs/flyfs/posix/fusefs"
	"github.com/flyfs/flyfs/posix/native"
)

// Config shapes a run.
type Config struct {
	Dir      string        // scratch directory (the disk measured); a temporary one when empty
	Size     int64         // sequential file size; default 2 GiB
	Threads  int           // random-read threads and create callers; default 16
	Duration time.Duration // per random-read measurement; default 5 s
	Creates  int           // files per create measurement; default 4000
	Batch    int           // native reads each thread keeps in flight; default 16
	NoSync   bool          // storage skips fsync (the local side never syncs)
	// SmallFiles is how many files the one-thread small-file walk takes;
	// default 2000.
	SmallFiles int
}

func (c *Config) defaults() {
	if c.Size <= 0 {
		c.Size = 2 << 30
	}
	if c.Threads <= 0 {
		c.Threads = 16
	}
	if c.Duration <= 0 {
		c.Duration = 5 * time.Second
	}
	if c.Creates <= 0 {
		c.Creates = 4000
	}
	if c.Batch <= 0 {
		c.Batch = 16
	}
	if c.SmallFiles <= 0 {
		c.SmallFiles = 2000
	}
}

// Row is one measurement: flyfs next to its baseline.
type Row struct {
	Name, Unit     string
	This, Baseline float64
	BaseName       string
	Local          float64 // the local directory's figure, when measured
	Target         float64 // the wanted This/Baseline (0: none)
}

const ioSize = 1 << 20

// Run measures and prints the table to w.
func Run(ctx context.Context, cfg Config, w io.Writer) (rows []Row, err error) {
	cfg.defaults()
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "flyfs-bench-fuse-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, errors.New("fusemount: no /dev/fuse")
	}
	c, err := cluster.Start(ctx, cluster.Config{Dir: filepath.Join(dir, "cluster"), NoSync: cfg.NoSync,
		Nodes: 1, Replicas: 1, Chains: 4, Metads: 1, Stripe: 4,
		SyncWindow: 100 * time.Millisecond, // the mount's changes durable at fsync or within 100 ms, as flyfs server's
		Local:      true})                  // the roles and the front end in one process, as flyfs server runs them
	if err != nil {
		return nil, err
	}
	defer c.Close()
	mnt := filepath.Join(dir, "mnt")
	local := filepath.Join(dir, "local")
	loopMnt := filepath.Join(dir, "loopmnt")
	for _, d := range []string{mnt, local, loopMnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if _, err := frontend.Mount(ctx, c, mnt, fusefs.Options{}); err != nil {
		return nil, err
	}
	loop, err := mountLoopback(local, loopMnt)
	if err != nil {
		return nil, err
	}
	defer loop.Unmount()

	fmt.Fprintf(w, "flyfs FUSE bench: %d MiB sequential file, 1 MiB requests; %d threads; 1 node, replication 1\n", cfg.Size>>20, cfg.Threads)

	// Sequential write, then read, on each of the three.
	paths := map[string]string{"flyfs": filepath.Join(mnt, "seq"), "loopback": filepath.Join(loopMnt, "seqloop"), "local": filepath.Join(local, "seq")}
	wr, rd := map[string]float64{}, map[string]float64{}
	for _, k := range []string{"local", "loopback", "flyfs"} {
		if wr[k], err = seqWrite(paths[k], cfg.Size); err != nil {
			return nil, fmt.Errorf("%s write: %w", k, err)
		}
		// Cold caches all the way down: the file's own pages and those of
		// whatever holds it (the local file under the loopback mount, the
		// chunk engine's files under flyfs).
		below := map[string]string{"flyfs": filepath.Join(dir, "cluster"), "loopback": filepath.Join(local, "seqloop"), "local": paths["local"]}
		dropTree(below[k])
		if rd[k], err = seqRead(paths[k], cfg.Size); err != nil {
			return nil, fmt.Errorf("%s read: %w", k, err)
		}
	}
	rows = append(rows,
		Row{Name: "sequential write, 1 MiB requests", Unit: "MiB/s", This: wr["flyfs"], Baseline: wr["loopback"], BaseName: "loopback FUSE", Local: wr["local"], Target: goalSeqWrite},
		Row{Name: "sequential read, 1 MiB requests", Unit: "MiB/s", This: rd["flyfs"], Baseline: rd["loopback"], BaseName: "loopback FUSE", Local: rd["local"], Target: goalSeqRead})

	// Buffered I/O as programs do it, each pair back to back (buffered.go).
	sides := map[string]side{
		"flyfs":    {path: mnt, below: []string{paths["flyfs"], filepath.Join(dir, "cluster")}},
		"loopback": {path: loopMnt, below: []string{paths["loopback"], filepath.Join(local, "seqloop")}},
	}
	pair := func(name, unit string, goal float64, fn func(k string) (float64, error)) error {
		var got [2]float64
		for i, k := range []string{"flyfs", "loopback"} {
			v, err := fn(k)
			if err != nil {
				return fmt.Errorf("%s on %s: %w", name, k, err)
			}
			got[i] = v
		}
		rows = append(rows, Row{Name: name, Unit: unit, This: got[0], Baseline: got[1], BaseName: "loopback FUSE", Target: goal})
		return nil
	}
	if err := pair("sequential read, 1 MiB requests, 4 streams", "MiB/s", goalSeqRead, func(k string) (float64, error) {
		return parallelSeqRead(sides[k], paths[k], cfg.Size, 4)
	}); err != nil {
		return nil, err
	}
	for _, th := range []int{1, cfg.Threads} {
		if err := pair(fmt.Sprintf("4 KiB random reads, buffered, %s", threadsName(th)), "ops/s", goalRandRead, func(k string) (float64, error) {
			return bufferedRandRead(sides[k], paths[k], cfg.Size, th, cfg.Duration)
		}); err != nil {
			return nil, err
		}
	}
	small := map[string][]float64{}
	for _, k := range []string{"flyfs", "loopback"} {
		if small[k], err = smallFiles(filepath.Join(sides[k].path, "small"), cfg.SmallFiles); err != nil {
			return nil, fmt.Errorf("small files on %s: %w", k, err)
		}
	}
	for i, st := range smallFileSteps {
		rows = append(rows, Row{Name: fmt.Sprintf("%s (%d files)", st.name, cfg.SmallFiles), Unit: "ops/s",
			This: small["flyfs"][i], Baseline: small["loopback"][i], BaseName: "loopback FUSE", Target: st.goal})
	}

	// 4 KiB random reads over the file: through the mount (O_DIRECT, so each
	// read is a FUSE request and not a page-cache hit) and through the
	// native API (each thread its own ring, Batch reads in flight).
	viaMount, err := randMount(paths["flyfs"], cfg)
	if err != nil {
		return nil, fmt.Errorf("random reads through the mount: %w", err)
	}
	viaNative, err := randNative(mnt, paths["flyfs"], cfg)
	if err != nil {
		return nil, fmt.Errorf("random reads through the native API: %w", err)
	}
	rows = append(rows, Row{Name: fmt.Sprintf("4 KiB random reads, %d threads (native: %d in flight each)", cfg.Threads, cfg.Batch), Unit: "ops/s",
		This: viaNative, Baseline: viaMount, BaseName: "mount (O_DIRECT)", Target: 2})

	// Creates.
	crM, err := creates(filepath.Join(mnt, "creates"), cfg)
	if err != nil {
		return nil, err
	}
	crL, err := creates(filepath.Join(local, "creates"), cfg)
	if err != nil {
		return nil, err
	}
	rows = append(rows, Row{Name: fmt.Sprintf("create+close, %d threads", cfg.Threads), Unit: "files/s", This: crM, Baseline: crL, BaseName: "local dir"})
	print(w, rows)
	return rows, nil
}

func print(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEASUREMENT\tFLYFS\tBASELINE\tRATIO\tTARGET\tLOCAL DIR")
	for _, r := range rows {
		target, local := "-", "-"
		if r.Target > 0 {
			verdict := "met"
			if r.This < r.Target*r.Baseline {
				verdict = "MISSED"
			}
			target = fmt.Sprintf(">= %.1fx (%s)", r.Target, verdict)
		}
		if r.Local > 0 {
			local = fmt.Sprintf("%.0f %s", r.Local, r.Unit)
		}
		ratio := 0.0
		if r.Baseline > 0 {
			ratio = r.This / r.Baseline
		}
		fmt.Fprintf(tw, "%s\t%.0f %s\t%.0f %s (%s)\t%.2fx\t%s\t%s\n", r.Name, r.This, r.Unit, r.Baseline, r.Unit, r.BaseName, ratio, target, local)
	}
	tw.Flush()
}

// mountLoopback mounts go-fuse's loopback file system of dir at mnt with
// the same request size and read-ahead as the flyfs mount.
func mountLoopback(dir, mnt string) (*fuse.Server, error) {
	// Without passthrough: as root on recent kernels go-fuse's stock
	// loopback hands open files to the kernel, which then bypasses the daemon
	// and measures the local disk, not FUSE.
	root, err := NewDaemonLoopback(dir)
	if err != nil {
		return nil, err
	}
	one := time.Second
	srv, err := fs.Mount(mnt, root, &fs.Options{
		// go-fuse's own log would print a line per read its splice path
		// declines, burying the report; the loopback has nothing else to say.
		MountOptions: fuse.MountOptions{DirectMount: true, MaxWrite: 1 << 20, MaxReadAhead: 1 << 20, MaxBackground: 64, FsName: "loopback", Name: "loopback",
			Logger: log.New(io.Discard, "", 0)},
		AttrTimeout: &one, EntryTimeout: &one,
	})
	if err != nil {
		return nil, err
	}
	fusefs.SetReadAhead(mnt, 4096)
	return srv, nil
}

func threadsName(n int) string {
	if n == 1 {
		return "1 thread"
	}
	return fmt.Sprintf("%d threads", n)
}

func mibps(n int64, d time.Duration) float64 { return float64(n) / (1 << 20) / d.Seconds() }

// pattern fills a buffer with bytes that are not all alike.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + i>>10)
	}
	return b
}

func seqWrite(p string, size int64) (float64, error) {
	buf := pattern(ioSize)
	start := time.Now()
	f, err := os.Create(p)
	if err != nil {
		return 0, err
	}
	for off := int64(0); off < size; off += ioSize {
		n := min(int64(ioSize), size-off)
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return 0, err
		}
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	return mibps(size, time.Since(start)), nil
}

// seqRead reads the file after dropping its cached pages (so the read goes
// down the path measured rather than to the page cache).
func seqRead(p string, size int64) (float64, error) {
	dropCache(p)
	buf := make([]byte, ioSize)
	start := time.Now()
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total int64
	for {
		n, err := f.Read(buf)
		total += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if total != size {
		return 0, fmt.Errorf("read %d bytes, wrote %d", total, size)
	}
	return mibps(size, time.Since(start)), nil
}

// dropTree drops the cached pages of every file under root.
func dropTree(root string) {
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			dropCache(p)
		}
		return nil
	})
}

func dropCache(p string) {
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	f.Sync()
	const fadvDontneed = 4
	syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontneed, 0, 0)
}

// alignedBuf returns n bytes aligned for O_DIRECT.
func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	off := 4096 - int(uintptr(unsafe.Pointer(&b[0]))&4095)
	return b[off : off+n]
}

// timed runs fn on threads goroutines for d and returns ops/s.
func timed(threads int, d time.Duration, fn func(th int, rng *rand.Rand) (int, error)) (float64, error) {
	var ops atomic.Int64
	var firstErr error
	var once sync.Once
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for th := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(th), 42))
			for time.Now().Before(deadline) {
				n, err := fn(th, rng)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				ops.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	return float64(ops.Load()) / time.Since(start).Seconds(), firstErr
}

func randMount(p string, cfg Config) (float64, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	blocks := cfg.Size / 4096
	bufs := make([][]byte, cfg.Threads)
	for i := range bufs {
		bufs[i] = alignedBuf(4096)
	}
	return timed(cfg.Threads, cfg.Duration, func(th int, rng *rand.Rand) (int, error) {
		off := rng.Int64N(blocks) * 4096
		n, err := f.ReadAt(bufs[th], off)
		if err != nil || n != 4096 {
			return 0, fmt.Errorf("read at %d: %d, %v", off, n, err)
		}
		return 1, nil
	})
}

func randNative(mnt, p string, cfg Config) (float64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	ref, err := native.FileOf(mnt, f)
	if err != nil {
		return 0, err
	}
	iov, err := native.NewIov(mnt, cfg.Threads*cfg.Batch*4096)
	if err != nil {
		return 0, err
	}
	defer iov.Close()
	rings := make([]*native.Ring, cfg.Threads)
	for i := range rings {
		if rings[i], err = native.NewRing(mnt, cfg.Batch, cfg.Batch); err != nil {
			return 0, err
		}
		defer rings[i].Close()
	}
	blocks := cfg.Size / 4096
	cqes := make([][]native.Completion, cfg.Threads)
	for i := range cqes {
		cqes[i] = make([]native.Completion, cfg.Batch)
	}
	return timed(cfg.Threads, cfg.Duration, func(th int, rng *rand.Rand) (int, error) {
		r := rings[th]
		base := th * cfg.Batch * 4096
		for i := range cfg.Batch {
			if err := r.PrepRead(iov, base+i*4096, 4096, ref, rng.Int64N(blocks)*4096, uint64(i)); err != nil {
				return 0, err
			}
		}
		r.Submit()
		for done := 0; done < cfg.Batch; {
			n, err := r.Wait(cqes[th], cfg.Batch-done, 30*time.Second)
			if err != nil {
				return 0, err
			}
			if n == 0 {
				return 0, errors.New("native reads did not complete in 30 s")
			}
			for _, c := range cqes[th][:n] {
				if c.Result != 4096 {
					return 0, fmt.Errorf("native read: result %d", c.Result)
				}
			}
			done += n
		}
		return cfg.Batch, nil
	})
}

func creates(dir string, cfg Config) (float64, error) {
	for th := range cfg.Threads {
		if err := os.MkdirAll(filepath.Join(dir, fmt.Sprint(th)), 0o755); err != nil {
			return 0, err
		}
	}
	per := cfg.Creates / cfg.Threads
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Threads)
	start := time.Now()
	for th := range cfg.Threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				f, err := os.Create(filepath.Join(dir, fmt.Sprint(th), fmt.Sprint(i)))
				if err == nil {
					err = f.Close()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(per*cfg.Threads) / time.Since(start).Seconds(), nil
}
