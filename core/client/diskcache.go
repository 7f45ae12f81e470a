package client

import (
	"container/list"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// diskTier is the client's second cache tier: blocks of file data kept in
// files under a local directory (a local NVMe, say), across remounts.
//
// Layout: DIR/flyfs-cache holds "cluster" (the id of the cluster the blocks
// came from: a directory filled from another cluster is emptied), "lock"
// (flocked by the one client using it) and one file per region of a file
// version, <ino mod 256 in hex>/<ino>-<gen>-<region>. A region is
// regionBlocks CacheBlocks; its file starts with a header page (magic, ino,
// gen, region, then each block's length and CRC32C, length 0 meaning absent)
// and holds each block at its place after it (a sparse file).
//
// Invariants:
//   - a header slot is set only after the block's data was written, and a
//     block is served only if its CRC32C matches the slot on that read; so a
//     block half-written when the client died (its data or its slot lost)
//     is dropped, never served. Nothing is synced: the checksum is the guard;
//   - used is the sum over the regions held of regionHeader plus their blocks'
//     lengths, and used <= max after every set;
//   - the index holds one version of an inode: a region of a new Gen drops
//     the regions of the others.
type diskTier struct {
	dir  string
	max  int64
	ttl  time.Duration // 0: none
	lock *os.File      // flocked: one client per directory

	mu      sync.Mutex
	used    int64
	lru     *list.List // front: most recently used; values *diskRegion
	regions map[regionKey]*diskRegion
	ofIno   map[uint64]map[regionKey]*diskRegion
	open    *list.List // regions with an open file, front most recently opened

	hits, misses, evictions, corrupt atomic.Uint64
}

const (
	regionBlocks = 64 // 4 MiB regions
	regionHeader = 4096
	slotsAt      = 40 // header: magic, ino, gen, region, birth, then 8 bytes per slot
	maxOpenFiles = 256
	diskMagic    = "flyfsL2\x01"
)

type regionKey struct{ ino, gen, region uint64 }

type diskRegion struct {
	key  regionKey
	path string
	f    *os.File // nil when closed (at most maxOpenFiles are open)
	// rf is the file opened again for random reads (POSIX_FADV_RANDOM): a
	// block read out of order through f would bring the device's whole
	// readahead (often MiBs) in with it. next is the block after the
	// furthest one read: a block near it (a sequential reader's requests
	// arrive a few at a time, in any order) goes through f, with readahead.
	rf    *os.File
	next  int
	lens  [regionBlocks]uint32
	sums  [regionBlocks]uint32
	bytes int64     // regionHeader plus the blocks' lengths
	born  time.Time // when the region was made, for the TTL
	elem  *list.Element
	opel  *list.Element // in open, while f != nil
}

// errCacheBusy: another client uses the cache directory.
var errCacheBusy = errors.New("cache directory is in use by another flyfs client")

// openDiskTier opens (creating it if need be) the cache under dir for the
// cluster clusterID, of at most max bytes, and indexes what an earlier
// client left there.
func openDiskTier(dir string, max int64, clusterID string) (*diskTier, error) {
	root := filepath.Join(dir, "flyfs-cache")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(root, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("%s: %w", root, errCacheBusy)
	}
	d := &diskTier{dir: root, max: max, lock: lock, lru: list.New(), open: list.New(),
		regions: map[regionKey]*diskRegion{}, ofIno: map[uint64]map[regionKey]*diskRegion{}}
	if err := d.claim(clusterID); err != nil {
		lock.Close()
		return nil, err
	}
	if err := d.index(); err != nil {
		lock.Close()
		return nil, err
	}
	return d, nil
}

// claim empties the directory if its blocks came from another cluster (or
// from none on record), and records clusterID.
func (d *diskTier) claim(clusterID string) error {
	idFile := filepath.Join(d.dir, "cluster")
	if b, err := os.ReadFile(idFile); err == nil && string(b) == clusterID {
		return nil
	}
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return fmt.Errorf("cache directory: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() && isShardDir(e.Name()) {
			if err := os.RemoveAll(filepath.Join(d.dir, e.Name())); err != nil {
				return fmt.Errorf("empty cache directory: %w", err)
			}
		}
	}
	if err := os.WriteFile(idFile, []byte(clusterID), 0o600); err != nil {
		return fmt.Errorf("cache directory: %w", err)
	}
	return nil
}

func isShardDir(name string) bool {
	n, err := strconv.ParseUint(name, 16, 8)
	return err == nil && len(name) == 2 && fmt.Sprintf("%02x", n) == name
}

func (d *diskTier) regionPath(k regionKey) string {
	return filepath.Join(d.dir, fmt.Sprintf("%02x", k.ino%256), fmt.Sprintf("%d-%d-%d", k.ino, k.gen, k.region))
}

// index reads the header of every region file, most recently written first
// in the LRU, and drops what does not parse or does not fit.
func (d *diskTier) index() error {
	type found struct {
		r     *diskRegion
		mtime time.Time
	}
	var all []found
	err := filepath.WalkDir(d.dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || path == d.dir {
			return err
		}
		if e.IsDir() {
			if !isShardDir(e.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if filepath.Dir(path) == d.dir {
			return nil // cluster, lock
		}
		r, err := readRegion(path)
		if err != nil {
			os.Remove(path) // not ours, or a header lost in a crash: refetched
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		all = append(all, found{r, info.ModTime()})
		return nil
	})
	if err != nil {
		return fmt.Errorf("index cache directory: %w", err)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mtime.After(all[j].mtime) })
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range all {
		if other := d.ofIno[f.r.key.ino]; len(other) > 0 {
			if _, same := other[f.r.key]; !same && anyRegion(other).key.gen != f.r.key.gen {
				os.Remove(f.r.path) // an older version (newest first)
				continue
			}
		}
		d.addLocked(f.r, false)
	}
	for d.used > d.max && d.lru.Len() > 0 {
		d.evictLocked(d.lru.Back().Value.(*diskRegion))
	}
	return nil
}

func anyRegion(m map[regionKey]*diskRegion) *diskRegion {
	for _, r := range m {
		return r
	}
	return nil
}

// readRegion parses a region file's name and header.
func readRegion(path string) (*diskRegion, error) {
	var k regionKey
	parts := strings.Split(filepath.Base(path), "-")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%s: not a region file", path)
	}
	for i, p := range []*uint64{&k.ino, &k.gen, &k.region} {
		v, err := strconv.ParseUint(parts[i], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: not a region file", path)
		}
		*p = v
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := make([]byte, regionHeader)
	if _, err := f.ReadAt(h, 0); err != nil {
		return nil, err
	}
	if string(h[:8]) != diskMagic || binary.LittleEndian.Uint64(h[8:]) != k.ino ||
		binary.LittleEndian.Uint64(h[16:]) != k.gen || binary.LittleEndian.Uint64(h[24:]) != k.region {
		return nil, fmt.Errorf("%s: bad header", path)
	}
	r := &diskRegion{key: k, path: path, bytes: regionHeader, born: time.Unix(0, int64(binary.LittleEndian.Uint64(h[32:])))}
	for i := range regionBlocks {
		n := binary.LittleEndian.Uint32(h[slotsAt+8*i:])
		if n == 0 || n > CacheBlock {
			continue
		}
		r.lens[i], r.sums[i] = n, binary.LittleEndian.Uint32(h[slotsAt+8*i+4:])
		r.bytes += int64(n)
	}
	return r, nil
}

func (d *diskTier) addLocked(r *diskRegion, front bool) {
	if front {
		r.elem = d.lru.PushFront(r)
	} else {
		r.elem = d.lru.PushBack(r)
	}
	d.regions[r.key] = r
	m := d.ofIno[r.key.ino]
	if m == nil {
		m = map[regionKey]*diskRegion{}
		d.ofIno[r.key.ino] = m
	}
	m[r.key] = r
	d.used += r.bytes
}

// removeLocked forgets a region and deletes its file.
func (d *diskTier) removeLocked(r *diskRegion) {
	if d.regions[r.key] != r {
		return
	}
	d.lru.Remove(r.elem)
	delete(d.regions, r.key)
	if m := d.ofIno[r.key.ino]; m != nil {
		delete(m, r.key)
		if len(m) == 0 {
			delete(d.ofIno, r.key.ino)
		}
	}
	d.used -= r.bytes
	d.closeLocked(r)
	os.Remove(r.path)
}

func (d *diskTier) evictLocked(r *diskRegion) {
	d.removeLocked(r)
	d.evictions.Add(1)
}

func (d *diskTier) closeLocked(r *diskRegion) {
	if r.f != nil {
		r.f.Close() // a read in flight on it ends with os.ErrClosed: a miss
		r.f = nil
		d.open.Remove(r.opel)
	}
	if r.rf != nil {
		r.rf.Close()
		r.rf = nil
	}
}

// fileLocked returns r's open file, opening it (and closing the least
// recently opened beyond maxOpenFiles) if need be.
func (d *diskTier) fileLocked(r *diskRegion) (*os.File, error) {
	if r.f != nil {
		return r.f, nil
	}
	f, err := os.OpenFile(r.path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	r.f, r.opel = f, d.open.PushFront(r)
	if rf, err := os.Open(r.path); err == nil {
		if unix.Fadvise(int(rf.Fd()), 0, 0, unix.FADV_RANDOM) == nil {
			r.rf = rf
		} else {
			rf.Close()
		}
	}
	for d.open.Len() > maxOpenFiles {
		d.closeLocked(d.open.Back().Value.(*diskRegion))
	}
	return f, nil
}

// liveLocked returns the region held under k, dropping it if it outlived
// the TTL.
func (d *diskTier) liveLocked(k regionKey, now time.Time) *diskRegion {
	r := d.regions[k]
	if r != nil && d.ttl > 0 && now.Sub(r.born) > d.ttl {
		d.removeLocked(r)
		return nil
	}
	return r
}

// seqBehind and seqAhead bound "near" the next block of a sequential
// stream, in blocks.
const seqBehind, seqAhead = 8, 8

func split(k blockKey) (regionKey, int) {
	return regionKey{k.ino, k.gen, k.index / regionBlocks}, int(k.index % regionBlocks)
}

func blockAt(i int) int64 { return regionHeader + int64(i)*CacheBlock }

// get returns the block if it is held and intact; a block that fails its
// checksum (or cannot be read whole) is dropped and counted. The block is
// read into dst when it is long enough (dst may hold garbage after a miss),
// else into a buffer of its own.
func (d *diskTier) get(k blockKey, now time.Time, dst []byte) ([]byte, bool) {
	rk, i := split(k)
	d.mu.Lock()
	r := d.liveLocked(rk, now)
	if r == nil || r.lens[i] == 0 {
		d.mu.Unlock()
		d.misses.Add(1)
		return nil, false
	}
	n, sum := r.lens[i], r.sums[i]
	f, err := d.fileLocked(r)
	if err == nil && (i+seqBehind < r.next || i > r.next+seqAhead) && r.rf != nil {
		f = r.rf // far from where the last reads were: no readahead
	}
	r.next = max(r.next, i+1)
	if i+1 < r.next-seqBehind {
		r.next = i + 1 // a jump back: a new stream
	}
	d.lru.MoveToFront(r.elem)
	d.mu.Unlock()
	if err != nil {
		d.misses.Add(1)
		return nil, false
	}
	data := dst
	if len(data) < int(n) {
		data = make([]byte, n)
	}
	data = data[:n]
	_, err = f.ReadAt(data, blockAt(i))
	if errors.Is(err, os.ErrClosed) {
		d.misses.Add(1) // evicted meanwhile
		return nil, false
	}
	if err != nil || crc32.Checksum(data, castagnoli) != sum {
		d.corrupt.Add(1)
		d.misses.Add(1)
		d.mu.Lock()
		if d.regions[rk] == r && r.sums[i] == sum && r.lens[i] == n {
			d.clearSlotLocked(r, i)
		}
		d.mu.Unlock()
		return nil, false
	}
	d.hits.Add(1)
	return data, true
}

// holds says whether the tier holds the block with at least n bytes.
func (d *diskTier) holds(k blockKey, n uint64, now time.Time) bool {
	rk, i := split(k)
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.liveLocked(rk, now)
	return r != nil && r.lens[i] > 0 && uint64(r.lens[i]) >= n
}

// writeData writes the data of consecutive blocks of one region, the first
// k, into its file (creating it), ahead of setSlot; it returns the region
// written, for setSlot to check it is still the one held.
func (d *diskTier) writeData(k blockKey, data [][]byte, now time.Time) (*diskRegion, error) {
	rk, i := split(k)
	d.mu.Lock()
	r := d.liveLocked(rk, now)
	if r == nil {
		for _, other := range d.ofIno[k.ino] {
			if other.key.gen != k.gen {
				d.removeLocked(other) // another version of the file
			}
		}
		var err error
		if r, err = d.createLocked(rk, now); err != nil {
			d.mu.Unlock()
			return nil, err
		}
	}
	f, err := d.fileLocked(r)
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	want := 0
	for _, b := range data {
		want += len(b)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var n int
	var werr error
	// Through the RawConn, which holds f open: an eviction closing f meanwhile
	// cannot hand its descriptor to another file under this write.
	if err = rc.Write(func(fd uintptr) bool {
		n, werr = unix.Pwritev(int(fd), data, blockAt(i))
		return true
	}); err == nil {
		err = werr
	}
	if err == nil && n != want {
		err = fmt.Errorf("short write to the cache: %d of %d bytes", n, want)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.path, err)
	}
	return r, nil
}

// createLocked makes an empty region file and indexes it.
func (d *diskTier) createLocked(k regionKey, now time.Time) (*diskRegion, error) {
	r := &diskRegion{key: k, path: d.regionPath(k), bytes: regionHeader, born: now}
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	h := make([]byte, regionHeader)
	copy(h, diskMagic)
	binary.LittleEndian.PutUint64(h[8:], k.ino)
	binary.LittleEndian.PutUint64(h[16:], k.gen)
	binary.LittleEndian.PutUint64(h[24:], k.region)
	binary.LittleEndian.PutUint64(h[32:], uint64(now.UnixNano()))
	_, err = f.WriteAt(h, 0)
	if err == nil {
		// Sized whole up front (sparse), so writes within it do not move
		// the size.
		err = f.Truncate(blockAt(regionBlocks))
	}
	if err != nil {
		f.Close()
		os.Remove(r.path)
		return nil, err
	}
	f.Close()
	d.addLocked(r, true)
	return r, nil
}

// setSlotsLocked records blocks written by writeData into r, from block
// first on, with their lengths and sums (those not kept stay as they were),
// unless r is no longer held; then it evicts to stay within max. The caller
// decided, under the memory tier's lock, which blocks are still current.
func (d *diskTier) setSlotsLocked(r *diskRegion, first int, lens, sums []uint32, keep []bool) {
	if d.regions[r.key] != r {
		return // evicted or dropped since the data was written
	}
	f, err := d.fileLocked(r)
	if err != nil {
		return
	}
	slots := make([]byte, 8*len(lens))
	for j := range lens {
		n, sum := r.lens[first+j], r.sums[first+j]
		if keep[j] {
			n, sum = lens[j], sums[j]
		}
		binary.LittleEndian.PutUint32(slots[8*j:], n)
		binary.LittleEndian.PutUint32(slots[8*j+4:], sum)
	}
	if _, err := f.WriteAt(slots, slotsAt+8*int64(first)); err != nil {
		return
	}
	for j := range lens {
		if !keep[j] {
			continue
		}
		i := first + j
		delta := int64(lens[j]) - int64(r.lens[i])
		r.lens[i], r.sums[i] = lens[j], sums[j]
		r.bytes += delta
		d.used += delta
	}
	d.lru.MoveToFront(r.elem)
	for d.used > d.max && d.lru.Len() > 1 {
		d.evictLocked(d.lru.Back().Value.(*diskRegion))
	}
	if d.used > d.max {
		d.evictLocked(r) // one region larger than the whole tier
	}
}

func (d *diskTier) clearSlotLocked(r *diskRegion, i int) {
	if f, err := d.fileLocked(r); err == nil {
		var zero [8]byte
		f.WriteAt(zero[:], slotsAt+8*int64(i))
	}
	r.bytes -= int64(r.lens[i])
	d.used -= int64(r.lens[i])
	r.lens[i], r.sums[i] = 0, 0
}

// dropInoLocked deletes every region of ino.
func (d *diskTier) dropInoLocked(ino uint64) {
	for _, r := range d.ofIno[ino] {
		d.removeLocked(r)
	}
}

func (d *diskTier) stats() TierStats {
	d.mu.Lock()
	used := d.used
	d.mu.Unlock()
	return TierStats{Capacity: d.max, Used: used, Hits: d.hits.Load(), Misses: d.misses.Load(),
		Evictions: d.evictions.Load(), Corrupt: d.corrupt.Load()}
}

// close closes the files and lets the directory go.
func (d *diskTier) close() {
	d.mu.Lock()
	for d.open.Len() > 0 {
		d.closeLocked(d.open.Front().Value.(*diskRegion))
	}
	d.mu.Unlock()
	d.lock.Close()
}
