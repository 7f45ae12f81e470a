// Package metaops measures the namespace and file I/O through core/client
// in one run, each next to the same work on this machine's local file system
// (and file I/O next to one chunk engine): `flyfs bench meta`.
package metaops

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/storaged/engine"
)

// Config shapes a run.
type Config struct {
	Dir        string // scratch directory on the disk to measure; a temporary one when empty
	Callers    int    // concurrent callers; default 16
	Files      int    // files per create measurement; default 4000
	DirEntries int    // entries of the listed directory; default 100 000
	FileBytes  int64  // sequential file size; default 1 GiB
	NoSync     bool
}

// Row is one measurement and its baseline.
type Row struct {
	Name, Unit     string
	This, Baseline float64
	Target         string
}

// Run measures and prints.
func Run(ctx context.Context, cfg Config, w io.Writer) (rows []Row, err error) {
	if cfg.Callers <= 0 {
		cfg.Callers = 16
	}
	if cfg.Files <= 0 {
		cfg.Files = 4000
	}
	if cfg.DirEntries <= 0 {
		cfg.DirEntries = 100_000
	}
	if cfg.FileBytes <= 0 {
		cfg.FileBytes = 1 << 30
	}
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "flyfs-bench-meta-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	fs1, stop1, err := startCluster(ctx, dir, "r1", 1, cfg.NoSync)
	if err != nil {
		return nil, err
	}
	defer stop1.Close()
	local := filepath.Join(dir, "local")
	os.MkdirAll(local, 0o755)

	// Creates in one directory, then spread over 100.
	mk := func(fs *client.FS, p string) error { return fs.Mkdir(ctx, p, 0o755) }
	mk(fs1, "/one")
	os.MkdirAll(filepath.Join(local, "one"), 0o755)
	for d := 0; d < 100; d++ {
		mk(fs1, fmt.Sprintf("/d%02d", d))
		os.MkdirAll(filepath.Join(local, fmt.Sprintf("d%02d", d)), 0o755)
	}
	name := func(spread bool, i int) string {
		if spread {
			return fmt.Sprintf("d%02d/f%d", i%100, i)
		}
		return fmt.Sprintf("one/f%d", i)
	}
	for _, spread := range []bool{false, true} {
		this, err := rate(cfg.Callers, cfg.Files, func(i int) error {
			f, err := fs1.Create(ctx, "/"+name(spread, i), 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		})
		if err != nil {
			return nil, err
		}
		base, err := rate(cfg.Callers, cfg.Files, func(i int) error {
			f, err := os.Create(filepath.Join(local, name(spread, i)))
			if err != nil {
				return err
			}
			return f.Close()
		})
		if err != nil {
			return nil, err
		}
		label := "create+close, one directory"
		if spread {
			label = "create+close, 100 directories"
		}
		rows = append(rows, Row{label, "ops/s", this, base, ">= 0.10"})
	}
	fs1.SetInodeTTL(0) // cold: every stat asks metad (the creates above filled the cache)
	this, err := rate(cfg.Callers, cfg.Files, func(i int) error { _, err := fs1.Stat(ctx, "/"+name(true, i)); return err })
	fs1.SetInodeTTL(client.DefaultInodeTTL)
	if err != nil {
		return nil, err
	}
	base, _ := rate(cfg.Callers, cfg.Files, func(i int) error { _, err := os.Stat(filepath.Join(local, name(true, i))); return err })
	rows = append(rows, Row{"stat, cold (each a metad RPC)", "ops/s", this, base, ">= 0.20"})
	// The same paths again within the client's 1 s attribute cache, as a
	// loader that stats its dataset's files repeatedly sees it. Files are
	// taken in slices that fit the TTL.
	warmN := min(cfg.Files, 2000)
	if _, err := rate(cfg.Callers, warmN, func(i int) error { _, err := fs1.Stat(ctx, "/"+name(true, i)); return err }); err != nil {
		return nil, err
	}
	this, err = rate(cfg.Callers, warmN*20, func(i int) error { _, err := fs1.Stat(ctx, "/"+name(true, i%warmN)); return err })
	if err != nil {
		return nil, err
	}
	base, _ = rate(cfg.Callers, warmN*20, func(i int) error { _, err := os.Stat(filepath.Join(local, name(true, i%warmN))); return err })
	rows = append(rows, Row{"stat, warm (attribute cache, 1 s TTL)", "ops/s", this, base, ">= 0.20"})
	this, err = rate(cfg.Callers, cfg.Files, func(i int) error {
		return fs1.Rename(ctx, "/"+name(true, i), "/"+name(true, i)+".r")
	})
	if err != nil {
		return nil, err
	}
	base, _ = rate(cfg.Callers, cfg.Files, func(i int) error {
		p := filepath.Join(local, name(true, i))
		return os.Rename(p, p+".r")
	})
	rows = append(rows, Row{"rename", "ops/s", this, base, ""})

	// Readdir of a big directory.
	mk(fs1, "/big")
	os.MkdirAll(filepath.Join(local, "big"), 0o755)
	if _, err := rate(cfg.Callers, cfg.DirEntries, func(i int) error {
		f, err := fs1.Create(ctx, fmt.Sprintf("/big/e%07d", i), 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	}); err != nil {
		return nil, err
	}
	rate(cfg.Callers, cfg.DirEntries, func(i int) error {
		f, err := os.Create(filepath.Join(local, "big", fmt.Sprintf("e%07d", i)))
		if err == nil {
			f.Close()
		}
		return err
	})
	start := time.Now()
	ents, err := fs1.ReadDir(ctx, "/big")
	if err != nil || len(ents) != cfg.DirEntries {
		return nil, fmt.Errorf("readdir: %d entries, %v", len(ents), err)
	}
	this = float64(len(ents)) / time.Since(start).Seconds()
	start = time.Now()
	lents, err := os.ReadDir(filepath.Join(local, "big"))
	if err != nil {
		return nil, err
	}
	base = float64(len(lents)) / time.Since(start).Seconds()
	rows = append(rows, Row{fmt.Sprintf("readdir of %d entries", cfg.DirEntries), "entries/s", this, base, ""})

	// Sequential file I/O: one chunk engine, then 1 replica, then 3.
	ew, er, err := engineSeq(filepath.Join(dir, "engine"), cfg.FileBytes, cfg.NoSync)
	if err != nil {
		return nil, err
	}
	fs3, stop3, err := startCluster(ctx, dir, "r3", 3, cfg.NoSync)
	if err != nil {
		return nil, err
	}
	defer stop3.Close()
	for _, c := range []struct {
		label string
		fs    *client.FS
	}{{"1 replica", fs1}, {"3 replicas", fs3}} {
		wr, rd, err := fileSeq(ctx, c.fs, cfg.FileBytes)
		if err != nil {
			return nil, err
		}
		rows = append(rows, Row{"sequential write, " + c.label + " (vs one engine)", "MB/s", wr, ew, ""},
			Row{"sequential read, " + c.label + " (vs one engine)", "MB/s", rd, er, ""})
	}

	sync := "fsync on"
	if cfg.NoSync {
		sync = "fsync off"
	}
	fmt.Fprintf(w, "flyfs bench meta: %d callers through core/client over loopback, pebble metadata, %s; baseline: this machine's local file system (file I/O: one chunk engine)\n", cfg.Callers, sync)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measurement\tunit\tflyfs\tbaseline\tratio\ttarget\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.3f\t%s\t\n", r.Name, r.Unit, r.This, r.Baseline, r.This/r.Baseline, r.Target)
	}
	tw.Flush()
	return rows, nil
}

// startCluster starts mgmtd, three storaged with chains of `replicas` and
// a metad on pebble under dir/name, and returns a client over them; the
// cluster stops at the close of the returned io.Closer.
func startCluster(ctx context.Context, dir, name string, replicas int, noSync bool) (*client.FS, io.Closer, error) {
	c, err := cluster.Start(ctx, cluster.Config{Dir: filepath.Join(dir, name), NoSync: noSync, Nodes: 3, Chains: 6,
		Replicas: replicas, Metads: 1, ChunkSize: 1 << 20, Stripe: 6})
	if err != nil {
		return nil, nil, err
	}
	fs, err := c.Dial(ctx, "client", nil)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return fs, closers{fs, c}, nil
}

// closers closes each in order.
type closers []io.Closer

func (cs closers) Close() error {
	for _, c := range cs {
		c.Close()
	}
	return nil
}

// rate runs n operations from callers goroutines and returns operations/s.
func rate(callers, n int, op func(i int) error) (float64, error) {
	took, err := bench.Spread(callers, n, op)
	return float64(n) / took.Seconds(), err
}

const block = 4 << 20

// fileSeq writes then reads one file sequentially in 4 MiB blocks.
func fileSeq(ctx context.Context, fs *client.FS, size int64) (float64, float64, error) {
	buf := make([]byte, block)
	for i := range buf {
		buf[i] = byte(i)
	}
	f, err := fs.Create(ctx, "/seq", 0o644)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	for off := int64(0); off < size; off += block {
		if _, err := f.WriteAt(buf[:min(block, size-off)], off); err != nil {
			return 0, 0, err
		}
	}
	if err := f.Close(); err != nil {
		return 0, 0, err
	}
	wr := float64(size) / 1e6 / time.Since(start).Seconds()
	r, err := fs.Open(ctx, "/seq")
	if err != nil {
		return 0, 0, err
	}
	start = time.Now()
	for off := int64(0); off < size; off += block {
		if _, err := r.ReadAt(buf[:min(block, size-off)], off); err != nil && err != io.EOF {
			return 0, 0, err
		}
	}
	return wr, float64(size) / 1e6 / time.Since(start).Seconds(), nil
}

// engineSeq writes then reads the same bytes as 1 MiB chunks through one
// chunk engine, sequentially.
func engineSeq(dir string, size int64, noSync bool) (float64, float64, error) {
	e, err := engine.Open(dir, engine.Options{Sync: !noSync})
	if err != nil {
		return 0, 0, err
	}
	defer e.Close()
	buf := make([]byte, 1<<20)
	n := uint64((size + (1 << 20) - 1) >> 20)
	start := time.Now()
	for i := uint64(0); i < n; i++ {
		k := engine.Key{Chain: 1, Chunk: layout.MakeChunkID(1, i)}
		if _, err := e.Apply(k, engine.Update{Data: buf, ChunkSize: 1 << 20, UpdateVer: 1, CommitVer: 1, ChainVer: 1}); err != nil {
			return 0, 0, err
		}
	}
	wr := float64(n<<20) / 1e6 / time.Since(start).Seconds()
	start = time.Now()
	for i := uint64(0); i < n; i++ {
		h, err := e.Get(engine.Key{Chain: 1, Chunk: layout.MakeChunkID(1, i)})
		if err != nil {
			return 0, 0, err
		}
		_, err = h.ReadAt(buf, 0)
		h.Release()
		if err != nil && err != io.EOF {
			return 0, 0, err
		}
	}
	return wr, float64(n<<20) / 1e6 / time.Since(start).Seconds(), nil
}
