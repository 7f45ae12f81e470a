// Package chunkengine measures the chunk engine against plain file I/O on
// the same disk with the same sync setting, in one run:
//
//	(a) whole-chunk writes of new chunks vs pwrite at distinct offsets of a
//	    preallocated file (+ fdatasync per write when Sync);
//	(b) whole-chunk verified reads vs pread of the same amount;
//	(c) 4 KiB random reads inside existing chunks (engine and plain).
//
// Each measurement alternates engine and plain in short rounds, each round
// starting after a syncfs, so neither side inherits the other's writeback.
package chunkengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/storaged/engine"
)

// Config of a benchmark run.
type Config struct {
	Dir         string        // scratch directory on the disk to measure (a temp subdirectory is used and removed)
	Duration    time.Duration // per measurement and side; default 3s
	Sync        bool          // engine Options.Sync, and fdatasync per plain write
	ChunkSize   int           // default 1 MiB
	Concurrency int           // goroutines per measurement; default 4
	Rounds      int           // alternations engine/plain per measurement; default 3
	SegmentSize int           // engine Options.SegmentSize; 0: the engine's default
}

// Result of one measurement, in operations per second.
type Result struct {
	Name   string
	Engine float64
	Plain  float64
	Target float64 // minimum Engine/Plain; 0: none
}

// Ratio is Engine/Plain.
func (r Result) Ratio() float64 {
	if r.Plain == 0 {
		return 0
	}
	return r.Engine / r.Plain
}

// Met reports whether the target (if any) is reached.
func (r Result) Met() bool { return r.Target == 0 || r.Ratio() >= r.Target }

// Report of a run.
type Report struct {
	Config  Config
	Results []Result // write, read, 4 KiB random read
}

func (c *Config) defaults() {
	if c.Duration <= 0 {
		c.Duration = 3 * time.Second
	}
	if c.ChunkSize <= 0 {
		c.ChunkSize = 1 << 20
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.Rounds <= 0 {
		c.Rounds = 3
	}
}

// bench holds the two sides under test.
type bench struct {
	cfg   Config
	eng   *engine.Engine
	plain *os.File

	plainMu    sync.Mutex
	plainAlloc int64        // preallocated bytes of the plain file
	plainNext  atomic.Int64 // next chunk slot of the plain file

	engNext []atomic.Int64 // per worker: chunks written (keys (worker+1, 0..n))
	bufs    [][]byte       // per worker: chunk-size buffer
}

// Run performs the measurements and prints a table to w.
func Run(ctx context.Context, cfg Config, w io.Writer) (Report, error) {
	cfg.defaults()
	rep := Report{Config: cfg}
	if cfg.Dir == "" {
		return rep, errors.New("chunkengine: Dir is required")
	}
	if cfg.ChunkSize > engine.MaxChunkSize {
		return rep, fmt.Errorf("chunkengine: chunk size %d > %d", cfg.ChunkSize, engine.MaxChunkSize)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return rep, err
	}
	dir, err := os.MkdirTemp(cfg.Dir, "chunkengine-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	b := &bench{cfg: cfg, engNext: make([]atomic.Int64, cfg.Concurrency)}
	if b.eng, err = engine.Open(filepath.Join(dir, "engine"), engine.Options{Sync: cfg.Sync, SegmentSize: cfg.SegmentSize}); err != nil {
		return rep, err
	}
	defer b.eng.Close()
	if b.plain, err = os.OpenFile(filepath.Join(dir, "plain"), os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return rep, err
	}
	defer b.plain.Close()
	for i := range cfg.Concurrency {
		buf := make([]byte, cfg.ChunkSize)
		r := rand.New(rand.NewPCG(uint64(i), 1))
		for j := range buf {
			buf[j] = byte(r.Uint32())
		}
		b.bufs = append(b.bufs, buf)
	}

	type measure struct {
		name        string
		target      float64
		engine, pln func(w int, r *rand.Rand) error
	}
	cs := sizeName(cfg.ChunkSize)
	for _, m := range []measure{
		{cs + " chunk write (new chunks)", 0.7, b.engineWrite, b.plainWrite},
		{cs + " chunk read (verified)", 0.8, b.engineRead, b.plainRead},
		{"4KiB random read in chunks", 0, b.engineRead4K, b.plainRead4K},
	} {
		res := Result{Name: m.name, Target: m.target}
		var engOps, plainOps int64
		var engT, plainT time.Duration
		for round := range cfg.Rounds {
			for i := range 2 {
				side := (round + i) % 2 // alternate which side goes first
				if err := b.syncfs(); err != nil {
					return rep, err
				}
				fn := m.engine
				if side == 1 {
					fn = m.pln
				}
				n, d, err := b.run(ctx, cfg.Duration/time.Duration(cfg.Rounds), fn)
				if err != nil {
					return rep, fmt.Errorf("chunkengine: %s: %w", m.name, err)
				}
				if side == 0 {
					engOps, engT = engOps+n, engT+d
				} else {
					plainOps, plainT = plainOps+n, plainT+d
				}
			}
		}
		res.Engine = float64(engOps) / engT.Seconds()
		res.Plain = float64(plainOps) / plainT.Seconds()
		rep.Results = append(rep.Results, res)
	}
	printReport(w, rep)
	return rep, nil
}

func (b *bench) syncfs() error {
	rc, err := b.plain.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// run calls fn from Concurrency goroutines for d and returns the ops done.
func (b *bench) run(ctx context.Context, d time.Duration, fn func(w int, r *rand.Rand) error) (int64, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var ops atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for w := range b.cfg.Concurrency {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			for ctx.Err() == nil {
				if err := fn(w, r); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	return ops.Load(), time.Since(start), firstErr
}

func (b *bench) key(w int, i int64) engine.Key {
	return engine.Key{Chain: 1, Chunk: layout.MakeChunkID(uint64(w+1), uint64(i))}
}

func (b *bench) engineWrite(w int, _ *rand.Rand) error {
	i := b.engNext[w].Load()
	_, err := b.eng.Apply(b.key(w, i), engine.Update{Data: b.bufs[w], ChunkSize: uint32(b.cfg.ChunkSize), UpdateVer: 1, CommitVer: 1})
	if err == nil {
		b.engNext[w].Add(1)
	}
	return err
}

// plainWrite writes one chunk at the next free offset of the plain file,
// growing it by 256 chunks at a time like the engine's data files.
func (b *bench) plainWrite(w int, _ *rand.Rand) error {
	cs := int64(b.cfg.ChunkSize)
	off := (b.plainNext.Add(1) - 1) * cs
	b.plainMu.Lock()
	if off+cs > b.plainAlloc {
		grow := 256 * cs
		if err := unix.Fallocate(int(b.plain.Fd()), 0, b.plainAlloc, grow); err != nil {
			b.plainMu.Unlock()
			return fmt.Errorf("plain fallocate: %w", err)
		}
		b.plainAlloc += grow
	}
	b.plainMu.Unlock()
	if _, err := b.plain.WriteAt(b.bufs[w], off); err != nil {
		return err
	}
	if b.cfg.Sync {
		return unix.Fdatasync(int(b.plain.Fd()))
	}
	return nil
}

// randomChunk picks a chunk written by the engine write phase.
func (b *bench) randomChunk(r *rand.Rand) (engine.Key, bool) {
	w := r.IntN(len(b.engNext))
	for range len(b.engNext) {
		if n := b.engNext[w].Load(); n > 0 {
			return b.key(w, r.Int64N(n)), true
		}
		w = (w + 1) % len(b.engNext)
	}
	return engine.Key{}, false
}

func (b *bench) plainChunks() int64 {
	return min(b.plainNext.Load(), b.plainAlloc/int64(b.cfg.ChunkSize))
}

func (b *bench) engineRead(w int, r *rand.Rand) error {
	return b.engineReadAt(w, r, b.cfg.ChunkSize, false)
}

func (b *bench) engineRead4K(w int, r *rand.Rand) error { return b.engineReadAt(w, r, 4096, true) }

func (b *bench) engineReadAt(w int, r *rand.Rand, n int, random bool) error {
	k, ok := b.randomChunk(r)
	if !ok {
		return errors.New("no chunks written")
	}
	h, err := b.eng.Get(k)
	if err != nil {
		return err
	}
	defer h.Release()
	off := int64(0)
	if random {
		off = r.Int64N(int64(b.cfg.ChunkSize-n)/4096+1) * 4096
	}
	got, err := h.ReadAt(b.bufs[w][:n], off)
	if err != nil || got != n {
		return fmt.Errorf("engine read %d at %d: %d, %v", n, off, got, err)
	}
	return nil
}

func (b *bench) plainRead(w int, r *rand.Rand) error {
	return b.plainReadAt(w, r, b.cfg.ChunkSize, false)
}

func (b *bench) plainRead4K(w int, r *rand.Rand) error { return b.plainReadAt(w, r, 4096, true) }

func (b *bench) plainReadAt(w int, r *rand.Rand, n int, random bool) error {
	chunks := b.plainChunks()
	if chunks == 0 {
		return errors.New("no plain chunks written")
	}
	off := r.Int64N(chunks) * int64(b.cfg.ChunkSize)
	if random {
		off += r.Int64N(int64(b.cfg.ChunkSize-n)/4096+1) * 4096
	}
	_, err := b.plain.ReadAt(b.bufs[w][:n], off)
	return err
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

func printReport(w io.Writer, rep Report) {
	c := rep.Config
	fmt.Fprintf(w, "chunk engine vs plain file: dir=%s sync=%v chunk=%s concurrency=%d duration=%v per side\n",
		c.Dir, c.Sync, sizeName(c.ChunkSize), c.Concurrency, c.Duration)
	fmt.Fprintf(w, "%-32s %12s %12s %7s %7s\n", "measure", "engine op/s", "plain op/s", "ratio", "target")
	for _, r := range rep.Results {
		target, verdict := "-", ""
		if r.Target > 0 {
			target = fmt.Sprintf(">=%.2f", r.Target)
			verdict = "ok"
			if !r.Met() {
				verdict = "MISSED"
			}
		}
		line := fmt.Sprintf("%-32s %12.1f %12.1f %7.2f %7s  %s", r.Name, r.Engine, r.Plain, r.Ratio(), target, verdict)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}
