// Package files measures a file system through its path: big-file
// sequential write and read, small-file create/stat/read/delete, and random
// 4 KiB reads. It runs on any directory, so a flyfs mount and a local disk
// can be measured the same way.
package files

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/flyfs/flyfs/bench"
	"golang.org/x/sys/unix"
)

// Cache modes: how reads are kept from being served by the page cache that
// the preceding writes filled.
const (
	// CacheFadvise fsyncs every file and asks the kernel to drop its pages
	// (posix_fadvise DONTNEED) before reading: no root needed, works on local
	// disks and FUSE mounts; useless on tmpfs, which is the page cache.
	CacheFadvise = "fadvise"
	// CacheDrop syncs and writes 3 to /proc/sys/vm/drop_caches (root only):
	// drops every clean page and the dentry/inode caches.
	CacheDrop = "drop"
	// CacheDirect opens big files with O_DIRECT (block size and big size
	// must be multiples of 4 KiB); small files fall back to fadvise.
	CacheDirect = "direct"
	// CacheNone reads whatever is cached: measures warm reads.
	CacheNone = "none"
)

// Config of a run.
type Config struct {
	Dir          string
	Threads      int
	BigSize      int64 // bytes per thread's big file; 0 skips the big-file and random phases
	BlockSize    int64
	SmallCount   int // small files in all; 0 skips the small-file phases
	SmallSize    int64
	RandDuration time.Duration // 0 skips random reads
	RandSize     int64
	Cache        string
	Seed         uint64
	Keep         bool
	Progress     io.Writer
}

// Defaults are the flags' defaults.
func Defaults() Config {
	return Config{Threads: 4, BigSize: 256 << 20, BlockSize: 1 << 20, SmallCount: 1000, SmallSize: 128 << 10,
		RandDuration: 10 * time.Second, RandSize: 4096, Cache: CacheFadvise, Seed: 1}
}

const align = 4096

func (c *Config) check() error {
	switch {
	case c.Dir == "":
		return errors.New("no directory given")
	case c.Threads < 1:
		return fmt.Errorf("threads %d: want at least 1", c.Threads)
	case c.BigSize < 0 || c.SmallSize < 0 || c.SmallCount < 0 || c.RandDuration < 0:
		return errors.New("sizes, counts and durations must not be negative")
	case c.BigSize > 0 && c.BlockSize < 16:
		return fmt.Errorf("block size %d: want at least 16 bytes", c.BlockSize)
	case c.BlockSize > 1<<30:
		return fmt.Errorf("block size %d: at most 1 GiB", c.BlockSize)
	case c.SmallSize > 1<<30:
		return fmt.Errorf("small file size %d: at most 1 GiB", c.SmallSize)
	case c.RandDuration > 0 && c.BigSize > 0 && (c.RandSize < 1 || c.RandSize > c.BigSize):
		return fmt.Errorf("random read size %d: want 1..big size", c.RandSize)
	}
	switch c.Cache {
	case CacheFadvise, CacheDrop, CacheNone:
	case CacheDirect:
		if c.BigSize%c.BlockSize != 0 || c.BlockSize%align != 0 || c.RandSize%align != 0 {
			return fmt.Errorf("--cache direct needs the block size, the random read size and the big size to be multiples of %d", align)
		}
	default:
		return fmt.Errorf("cache mode %q: want fadvise, drop, direct or none", c.Cache)
	}
	st, err := os.Stat(c.Dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", c.Dir)
	}
	return nil
}

// run is one benchmark in progress.
type run struct {
	cfg  Config
	ctx  context.Context
	root string
	rep  *bench.Report
	bpf  int64 // blocks per big file
}

// Run measures cfg.Dir and returns the report. Its files live in a fresh
// subdirectory that is removed afterwards unless cfg.Keep.
func Run(ctx context.Context, cfg Config) (*bench.Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp(cfg.Dir, "flyfs-bench-")
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, ctx: ctx, root: root}
	if cfg.BigSize > 0 {
		r.bpf = (cfg.BigSize + cfg.BlockSize - 1) / cfg.BlockSize
	}
	abs, _ := filepath.Abs(cfg.Dir)
	r.rep = bench.NewReport("fs", abs, map[string]any{
		"threads": cfg.Threads, "big_size": bench.FormatSize(cfg.BigSize), "block_size": bench.FormatSize(cfg.BlockSize),
		"small_count": cfg.SmallCount, "small_size": bench.FormatSize(cfg.SmallSize),
		"rand_duration": cfg.RandDuration.String(), "rand_size": bench.FormatSize(cfg.RandSize),
		"cache": cfg.Cache, "fstype": fsType(cfg.Dir)})
	r.notes()
	err = r.all()
	if !cfg.Keep {
		if rerr := os.RemoveAll(root); rerr != nil && err == nil {
			err = fmt.Errorf("clean up %s: %w", root, rerr)
		}
	}
	return r.rep, err
}

func (r *run) notes() {
	switch r.cfg.Cache {
	case CacheNone:
		r.rep.Notes = append(r.rep.Notes, "--cache none: reads may be served from the page cache the writes filled")
	case CacheFadvise:
		r.rep.Notes = append(r.rep.Notes, "reads are cold: files were fsynced and their cached pages dropped (posix_fadvise DONTNEED) before each read phase")
	case CacheDrop:
		r.rep.Notes = append(r.rep.Notes, "reads are cold: the kernel's caches were dropped (/proc/sys/vm/drop_caches) before each read phase")
	case CacheDirect:
		r.rep.Notes = append(r.rep.Notes, "big-file and random I/O bypass the page cache (O_DIRECT); small files were dropped with posix_fadvise")
	}
	if fsType(r.cfg.Dir) == "tmpfs" {
		r.rep.Notes = append(r.rep.Notes, "the directory is on tmpfs: every read is from memory")
	}
	if r.dropEachRead() {
		r.rep.Notes = append(r.rep.Notes, "rand-read runs without read-ahead (POSIX_FADV_RANDOM) and drops each read's pages after it (a posix_fadvise call in each op)")
	}
	r.rep.Notes = append(r.rep.Notes, "seq-write includes each file's fsync; small-write does not fsync")
}

func (r *run) all() error {
	if r.cfg.BigSize > 0 {
		if err := r.phase(r.seqWrite()); err != nil {
			return err
		}
		if err := r.cold(r.bigFiles(), true); err != nil {
			return err
		}
		if err := r.phase(r.seqRead()); err != nil {
			return err
		}
		if r.cfg.RandDuration > 0 {
			if err := r.cold(r.bigFiles(), true); err != nil {
				return err
			}
			p, closeAll, err := r.randRead()
			if err != nil {
				return err
			}
			err = r.phase(p)
			closeAll()
			if err != nil {
				return err
			}
		}
	}
	if r.cfg.SmallCount > 0 {
		for t := 0; t < r.cfg.Threads; t++ {
			if err := os.MkdirAll(r.smallDir(t), 0o755); err != nil {
				return err
			}
		}
		if err := r.phase(r.smallWrite()); err != nil {
			return err
		}
		if err := r.phase(r.smallStat()); err != nil {
			return err
		}
		if err := r.cold(r.smallFiles(), false); err != nil {
			return err
		}
		if err := r.phase(r.smallRead()); err != nil {
			return err
		}
		if err := r.phase(r.smallDelete()); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) phase(p bench.Phase) error {
	p.Progress = r.cfg.Progress
	if p.Workers == 0 {
		p.Workers = r.cfg.Threads
	}
	res, err := bench.Run(r.ctx, p)
	if err != nil {
		return err
	}
	r.rep.Phases = append(r.rep.Phases, res)
	return nil
}

func (r *run) bigName(t int) string { return filepath.Join(r.root, fmt.Sprintf("big.%03d", t)) }

func (r *run) bigFiles() []string {
	var out []string
	for t := 0; t < r.cfg.Threads; t++ {
		out = append(out, r.bigName(t))
	}
	return out
}

func (r *run) smallDir(t int) string { return filepath.Join(r.root, "small", fmt.Sprintf("t%03d", t)) }

// Small files are spread over the threads' directories by the partition the
// runner gives each worker, so op i always lands on the same path.
func (r *run) smallName(w int, i int64) string {
	return filepath.Join(r.smallDir(w), "f"+strconv.FormatInt(i, 10))
}

func (r *run) smallFiles() []string {
	var out []string
	n, T := int64(r.cfg.SmallCount), int64(r.cfg.Threads)
	for w := int64(0); w < T; w++ {
		for i := w * n / T; i < (w+1)*n/T; i++ {
			out = append(out, r.smallName(int(w), i))
		}
	}
	return out
}

// blockLen is the length of block b of a big file.
func (r *run) blockLen(b int64) int64 {
	return min(r.cfg.BlockSize, r.cfg.BigSize-b*r.cfg.BlockSize)
}

// stamp writes (file, block) into the first 16 bytes so reads can check
// they got the block they asked for, not just any bytes.
func stamp(p []byte, file, block int64) {
	if len(p) >= 16 {
		binary.LittleEndian.PutUint64(p[0:], uint64(file)+1)
		binary.LittleEndian.PutUint64(p[8:], uint64(block)+1)
	}
}

func checkStamp(p []byte, file, block int64) error {
	if len(p) < 16 {
		return nil
	}
	f, b := binary.LittleEndian.Uint64(p[0:]), binary.LittleEndian.Uint64(p[8:])
	if f != uint64(file)+1 || b != uint64(block)+1 {
		return fmt.Errorf("data mismatch: block %d of file %d holds the stamp of block %d of file %d", block, file, int64(b)-1, int64(f)-1)
	}
	return nil
}

// buffers gives each worker a reusable buffer, aligned for O_DIRECT and
// filled with random bytes (so compressing or deduplicating layers get no
// free ride).
func (r *run) buffers(size int64) [][]byte {
	out := make([][]byte, r.cfg.Threads)
	for w := range out {
		out[w] = alignedBuf(int(size))
		rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(w)))
		for i := 0; i+8 <= len(out[w]); i += 8 {
			binary.LittleEndian.PutUint64(out[w][i:], rng.Uint64())
		}
	}
	return out
}

func alignedBuf(n int) []byte {
	b := make([]byte, n+align)
	off := 0
	if rem := int(uintptrOf(b) % align); rem != 0 {
		off = align - rem
	}
	return b[off : off+n : off+n]
}

func (r *run) openFlags() int {
	if r.cfg.Cache == CacheDirect {
		return unix.O_DIRECT
	}
	return 0
}

func openBig(name string, flags int) (*os.File, error) {
	f, err := os.OpenFile(name, flags, 0o644)
	if err != nil && flags&unix.O_DIRECT != 0 && errors.Is(err, unix.EINVAL) {
		return nil, fmt.Errorf("%w: this file system refuses O_DIRECT; use --cache fadvise or drop", err)
	}
	return f, err
}

func (r *run) seqWrite() bench.Phase {
	files := make([]*os.File, r.cfg.Threads)
	bufs := r.buffers(r.cfg.BlockSize)
	return bench.Phase{Name: "seq-write", Unit: bench.FormatSize(r.cfg.BlockSize) + " write", Count: int64(r.cfg.Threads) * r.bpf, Partition: true,
		Op: func(ctx context.Context, w int, i int64) (int64, error) {
			file, blk := i/r.bpf, i%r.bpf
			if blk == 0 {
				f, err := openBig(r.bigName(int(file)), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|r.openFlags())
				if err != nil {
					return 0, err
				}
				files[w] = f
			}
			p := bufs[w][:r.blockLen(blk)]
			stamp(p, file, blk)
			if _, err := files[w].WriteAt(p, blk*r.cfg.BlockSize); err != nil {
				return 0, err
			}
			if blk == r.bpf-1 {
				f := files[w]
				files[w] = nil
				if err := f.Sync(); err != nil {
					f.Close()
					return 0, err
				}
				if err := f.Close(); err != nil {
					return 0, err
				}
			}
			return int64(len(p)), nil
		}}
}

func (r *run) seqRead() bench.Phase {
	files := make([]*os.File, r.cfg.Threads)
	bufs := r.buffers(r.cfg.BlockSize)
	return bench.Phase{Name: "seq-read", Unit: bench.FormatSize(r.cfg.BlockSize) + " read", Count: int64(r.cfg.Threads) * r.bpf, Partition: true,
		Op: func(ctx context.Context, w int, i int64) (int64, error) {
			file, blk := i/r.bpf, i%r.bpf
			if blk == 0 {
				f, err := openBig(r.bigName(int(file)), os.O_RDONLY|r.openFlags())
				if err != nil {
					return 0, err
				}
				files[w] = f
			}
			p := bufs[w][:r.blockLen(blk)]
			n, err := files[w].ReadAt(p, blk*r.cfg.BlockSize)
			if n < len(p) {
				if err == nil || err == io.EOF {
					err = fmt.Errorf("short read: %d of %d bytes at block %d (file shorter than written)", n, len(p), blk)
				}
				return 0, err
			}
			if err := checkStamp(p, file, blk); err != nil {
				return 0, err
			}
			if blk == r.bpf-1 {
				err := files[w].Close()
				files[w] = nil
				if err != nil {
					return 0, err
				}
			}
			return int64(n), nil
		}}
}

// randRead opens its handles up front (not timed); the caller closes them
// with the returned function.
func (r *run) randRead() (bench.Phase, func(), error) {
	T := r.cfg.Threads
	// Every worker opens every big file, so reads spread over all of them.
	handles := make([][]*os.File, T)
	closeAll := func() {
		for _, hs := range handles {
			for _, h := range hs {
				h.Close()
			}
		}
	}
	for w := range handles {
		for t := 0; t < T; t++ {
			f, err := openBig(r.bigName(t), os.O_RDONLY|r.openFlags())
			if err != nil {
				closeAll()
				return bench.Phase{}, nil, err
			}
			if r.dropEachRead() {
				// No read-ahead: a 4 KiB read must fetch 4 KiB, not a window.
				unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM)
			}
			handles[w] = append(handles[w], f)
		}
	}
	bufs := r.buffers(r.cfg.RandSize)
	rngs := make([]*rand.Rand, T)
	for w := range rngs {
		rngs[w] = rand.New(rand.NewPCG(r.cfg.Seed^0x5eed, uint64(w)))
	}
	slots := r.cfg.BigSize / r.cfg.RandSize // aligned read positions per file
	return bench.Phase{Name: "rand-read", Unit: bench.FormatSize(r.cfg.RandSize) + " read", Duration: r.cfg.RandDuration,
		Op: func(ctx context.Context, w int, i int64) (int64, error) {
			t := rngs[w].IntN(T)
			f := handles[w][t]
			off := rngs[w].Int64N(slots) * r.cfg.RandSize
			n, err := f.ReadAt(bufs[w], off)
			if n < len(bufs[w]) {
				if err == nil || err == io.EOF {
					err = fmt.Errorf("short read: %d of %d bytes at %d of %s", n, len(bufs[w]), off, f.Name())
				}
				return 0, err
			}
			if r.dropEachRead() {
				// Keep the phase cold: the pages just read would otherwise
				// serve later reads of the same spot from memory.
				if err := unix.Fadvise(int(f.Fd()), off, r.cfg.RandSize, unix.FADV_DONTNEED); err != nil {
					return 0, fmt.Errorf("posix_fadvise: %w", err)
				}
			}
			if r.cfg.BlockSize%r.cfg.RandSize == 0 && off%r.cfg.BlockSize == 0 {
				if err := checkStamp(bufs[w], int64(t), off/r.cfg.BlockSize); err != nil {
					return 0, err
				}
			}
			return int64(n), nil
		}}, closeAll, nil
}

// dropEachRead: random reads in the fadvise and drop modes drop the pages
// they read, so the phase stays cold however long it runs.
func (r *run) dropEachRead() bool { return r.cfg.Cache == CacheFadvise || r.cfg.Cache == CacheDrop }

func (r *run) smallWrite() bench.Phase {
	bufs := r.buffers(max(r.cfg.SmallSize, 1))
	return bench.Phase{Name: "small-write", Unit: bench.FormatSize(r.cfg.SmallSize) + " file", Count: int64(r.cfg.SmallCount), Partition: true,
		Op: func(ctx context.Context, w int, i int64) (int64, error) {
			f, err := os.OpenFile(r.smallName(w, i), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return 0, err
			}
			p := bufs[w][:r.cfg.SmallSize]
			stamp(p, i, 0)
			if _, err := f.Write(p); err != nil {
				f.Close()
				return 0, err
			}
			return int64(len(p)), f.Close()
		}}
}

func (r *run) smallStat() bench.Phase {
	return bench.Phase{Name: "small-stat", Unit: "stat", Count: int64(r.cfg.SmallCount), Partition: true,
		Op: func(ctx context.Context, w int, i int64) (int64, error) {
			st, err := os.Stat(r.smallName(w, i))
			if err != nil {
				return 0, err
			}
			if st.Size() != r.cfg.SmallSize {
				return 0, fmt.Errorf("%s: size %d, wrote %d", st.Name(), st.Size(), r.cfg.SmallSize)
			}
			return 0, nil
		}}
}

func (r *run) smallRead() bench.Phase {
	bufs := r.buffers(r.cfg.SmallSize + 1)
	return bench.Phase{Name: "small-read", Unit: bench.FormatSize(r.cfg.SmallSize) + " file", Count: int64(r.cfg.SmallCount), Partition: true,
		Op: func(ctx context.Context, w int, i int64) (int64, error) {
			f, err := os.Open(r.smallName(w, i))
			if err != nil {
				return 0, err
			}
			defer f.Close()
			// One byte more than written: a longer file shows up.
			n, err := io.ReadFull(f, bufs[w])
			if err != io.ErrUnexpectedEOF && !(err == io.EOF && r.cfg.SmallSize == 0) {
				if err == nil {
					err = fmt.Errorf("%s is longer than the %d bytes written", f.Name(), r.cfg.SmallSize)
				}
				return 0, err
			}
			if int64(n) != r.cfg.SmallSize {
				return 0, fmt.Errorf("%s: read %d bytes, wrote %d", f.Name(), n, r.cfg.SmallSize)
			}
			if err := checkStamp(bufs[w][:n], i, 0); err != nil {
				return 0, err
			}
			return int64(n), nil
		}}
}

func (r *run) smallDelete() bench.Phase {
	return bench.Phase{Name: "small-delete", Unit: "unlink", Count: int64(r.cfg.SmallCount), Partition: true,
		Op: func(ctx context.Context, w int, i int64) (int64, error) {
			return 0, os.Remove(r.smallName(w, i))
		}}
}
