package engine

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// dataFile is one data file of a size class, carved into blocks of that
// class. The bitmap is in memory only: it is rebuilt at Open from the
// records, so "used" means referenced by a record or pinned by a Handle.
type dataFile struct {
	f      *os.File    // set at open, never changes
	direct *directFile // f's O_DIRECT twin (direct.go); nil where refused
	class  uint8
	idx    uint8
	syncs  syncGroup // the file's fdatasyncs, shared by concurrent writers

	// Guarded by the owning classAlloc.mu.
	nblocks uint32   // blocks backed by the file (preallocated)
	used    []uint64 // bit i set: block i is in use; covers at least nblocks bits
	nused   uint32
	hint    int // no free bit below word hint
}

func (d *dataFile) isUsed(i uint32) bool { return d.used[i/64]&(1<<(i%64)) != 0 }

// ensure makes the bitmap cover n blocks.
func (d *dataFile) ensure(n uint32) {
	if w := int((n + 63) / 64); w > len(d.used) {
		d.used = append(d.used, make([]uint64, w-len(d.used))...)
	}
}

func (d *dataFile) set(i uint32) {
	d.used[i/64] |= 1 << (i % 64)
	d.nused++
}

func (d *dataFile) clear(i uint32) {
	d.used[i/64] &^= 1 << (i % 64)
	d.nused--
	if w := int(i / 64); w < d.hint {
		d.hint = w
	}
}

// findFree returns the lowest free block; the caller checked nused < nblocks.
func (d *dataFile) findFree() (uint32, bool) {
	for w := d.hint; w < len(d.used); w++ {
		if d.used[w] == ^uint64(0) {
			continue
		}
		d.hint = w
		i := uint32(w*64 + bits.TrailingZeros64(^d.used[w]))
		if i < d.nblocks {
			return i, true
		}
		break
	}
	return 0, false
}

// classAlloc allocates blocks of one size class over filesPerClass files.
type classAlloc struct {
	mu    sync.Mutex
	files [filesPerClass]*dataFile
	next  int // round-robin start, spreads concurrent writers over the files
	fill  int // the file direct writes take blocks from while it has some
}

// allocator owns the data files and the free-block bitmaps.
//
// Invariant: a block is handed out by alloc only if its bit is clear, and its
// bit is set until free is called for it; so two live owners never share a
// block. Freed blocks are reused before any file grows.
type allocator struct {
	dir           string
	groupBlocks   int   // blocks preallocated per growth
	maxGroupBytes int64 // cap of one growth in bytes (large classes)
	reserve       int64 // free bytes to leave on the filesystem (for Pebble)
	classes       [NumClasses]classAlloc
}

func openAllocator(dir string, groupBlocks int, maxGroupBytes, reserve int64) (*allocator, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: create %s: %w", dir, err)
	}
	a := &allocator{dir: dir, groupBlocks: groupBlocks, maxGroupBytes: maxGroupBytes, reserve: reserve}
	for c := range uint8(NumClasses) {
		for i := range uint8(filesPerClass) {
			name := filepath.Join(dir, fmt.Sprintf("%s.%d", className(c), i))
			f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				a.close()
				return nil, fmt.Errorf("engine: open data file: %w", err)
			}
			st, err := f.Stat()
			if err != nil {
				f.Close()
				a.close()
				return nil, fmt.Errorf("engine: stat data file: %w", err)
			}
			d := &dataFile{f: f, direct: openDirect(name), class: c, idx: i, nblocks: uint32(st.Size() / blockSize(c))}
			d.ensure(d.nblocks)
			a.classes[c].files[i] = d
		}
	}
	return a, nil
}

func (a *allocator) close() error {
	var first error
	for c := range a.classes {
		for _, d := range a.classes[c].files {
			if d != nil {
				if err := d.f.Close(); err != nil && first == nil {
					first = err
				}
				if err := d.direct.close(); err != nil && first == nil {
					first = err
				}
			}
		}
	}
	return first
}

// file returns the data file of loc; loc must be valid (class < NumClasses,
// file < filesPerClass), which decodeRecord guarantees.
func (a *allocator) file(loc blockLoc) *os.File { return a.classes[loc.class].files[loc.file].f }

// eachFile calls fn for every data file until it returns an error. The
// files are opened with the allocator and stay until close.
func (a *allocator) eachFile(fn func(*dataFile) error) error {
	for c := range a.classes {
		for _, d := range a.classes[c].files {
			if d == nil {
				continue
			}
			if err := fn(d); err != nil {
				return err
			}
		}
	}
	return nil
}

// dataFile returns loc's data file.
func (a *allocator) dataFile(loc blockLoc) *dataFile { return a.classes[loc.class].files[loc.file] }

// directOf returns the O_DIRECT twin of loc's data file (nil: none).
func (a *allocator) directOf(loc blockLoc) *directFile {
	return a.classes[loc.class].files[loc.file].direct
}

// markUsed records at Open that a record references loc. It fails if the
// block lies past the end of its data file (the record cannot be right: data
// is made durable, file size included, before a record points at it) or if
// another record already claimed it.
func (a *allocator) markUsed(loc blockLoc) error {
	ca := &a.classes[loc.class]
	ca.mu.Lock()
	defer ca.mu.Unlock()
	d := ca.files[loc.file]
	switch {
	case loc.index >= d.nblocks:
		return fmt.Errorf("%w: block %v beyond the end of its data file (%d blocks)", ErrChecksum, loc, d.nblocks)
	case d.isUsed(loc.index):
		return fmt.Errorf("%w: block %v already used by another chunk", ErrChecksum, loc)
	}
	d.set(loc.index)
	return nil
}

// alloc returns a free block of class c for a write past the page cache
// (direct) or through it, growing the class if none is free. On a full
// filesystem it returns an error wrapping ErrNoSpace.
func (a *allocator) alloc(c uint8, direct bool) (blockLoc, error) {
	ca := &a.classes[c]
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if loc, ok := ca.take(direct); ok {
		return loc, nil
	}
	if err := a.growClass(ca, direct); err != nil {
		return blockLoc{}, err
	}
	if loc, ok := ca.take(direct); ok {
		return loc, nil
	}
	return blockLoc{}, fmt.Errorf("engine: allocator: no free block after growing class %s", className(c))
}

// take hands out the lowest free block of the first file that has one,
// from the round-robin start (moved past it) for a buffered write, from the
// fill file (moved to it) for a direct one. Buffered writes to one file
// queue on its inode lock, so they spread; direct writes to fresh blocks
// take that lock whatever the file, and one file filled in order keeps
// them sequential on the disk (spread, S3 PUTs of 64 MiB lost 7%).
func (ca *classAlloc) take(direct bool) (blockLoc, bool) {
	start := ca.next
	if direct {
		start = ca.fill
	}
	for k := range filesPerClass {
		f := (start + k) % filesPerClass
		d := ca.files[f]
		if d.nused < d.nblocks {
			if i, ok := d.findFree(); ok {
				if direct {
					ca.fill = f
				} else {
					ca.next = (f + 1) % filesPerClass
				}
				d.set(i)
				return blockLoc{class: d.class, file: d.idx, index: i}, true
			}
		}
	}
	return blockLoc{}, false
}

// growClass grows every file of the class by its share of a group, the
// shortest first. Fresh blocks are then in every file, so writers of new
// chunks at once write to different files: the kernel takes a file's inode
// lock for each buffered write, and writers of one file queue (and spin) on
// it. A file that cannot grow is passed over; it fails only if none grew.
func (a *allocator) growClass(ca *classAlloc, direct bool) error {
	files := ca.files
	slices.SortStableFunc(files[:], func(x, y *dataFile) int { return cmp.Compare(x.nblocks, y.nblocks) })
	if direct {
		if err := a.grow(files[0], int64(a.groupBlocks)); err != nil {
			return err
		}
		ca.fill = int(files[0].idx)
		return nil
	}
	share := max(min(int64(a.groupBlocks), a.maxGroupBytes/blockSize(files[0].class))/filesPerClass, 1)
	var last error
	grown := false
	for _, d := range files {
		err := a.grow(d, share)
		if err == nil {
			grown = true
			continue
		}
		if !errors.Is(err, ErrNoSpace) {
			return err
		}
		last = err
	}
	if !grown {
		return last
	}
	return nil
}

// grow preallocates blocks blocks at the end of d (at most maxGroupBytes).
// If the filesystem cannot hold them all (or would drop
// below the reserve), fewer are tried down to one before giving up with
// ErrNoSpace.
func (a *allocator) grow(d *dataFile, blocks int64) error {
	bs := blockSize(d.class)
	n := blocks
	if limit := a.maxGroupBytes / bs; n > limit {
		n = max(limit, 1)
	}
	var last error
	for ; n >= 1; n /= 2 {
		need := n * bs
		if a.reserve > 0 {
			var st unix.Statfs_t
			if err := unix.Statfs(a.dir, &st); err == nil {
				if avail := int64(st.Bavail) * int64(st.Bsize); avail-need < a.reserve {
					last = fmt.Errorf("%w: %d bytes free, %d needed + %d reserved", ErrNoSpace, avail, need, a.reserve)
					continue
				}
			}
		}
		err := fallocate(d.f, int64(d.nblocks)*bs, need)
		if err == nil {
			d.nblocks += uint32(n)
			d.ensure(d.nblocks)
			return nil
		}
		if !errors.Is(err, ErrNoSpace) {
			return err
		}
		last = err
	}
	return fmt.Errorf("engine: grow %s: %w", d.f.Name(), last)
}

// free returns loc to the free pool.
func (a *allocator) free(loc blockLoc) {
	ca := &a.classes[loc.class]
	ca.mu.Lock()
	defer ca.mu.Unlock()
	d := ca.files[loc.file]
	if loc.index < d.nblocks && d.isUsed(loc.index) {
		d.clear(loc.index)
	}
}

// ClassStats describes the blocks of one size class.
type ClassStats struct {
	BlockSize  int64
	Blocks     int64 // preallocated blocks
	UsedBlocks int64 // referenced by a chunk or pinned by a handle
}

func (a *allocator) stats() (cs [NumClasses]ClassStats, allocated int64) {
	for c := range a.classes {
		ca := &a.classes[c]
		ca.mu.Lock()
		cs[c].BlockSize = blockSize(uint8(c))
		for _, d := range ca.files {
			cs[c].Blocks += int64(d.nblocks)
			cs[c].UsedBlocks += int64(d.nused)
		}
		ca.mu.Unlock()
		allocated += cs[c].Blocks * cs[c].BlockSize
	}
	return cs, allocated
}

// isUsed reports whether loc's bit is set (Verify).
func (a *allocator) isUsed(loc blockLoc) bool {
	ca := &a.classes[loc.class]
	ca.mu.Lock()
	defer ca.mu.Unlock()
	d := ca.files[loc.file]
	return loc.index < d.nblocks && d.isUsed(loc.index)
}
