package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/flyfs/flyfs/core/kv/pebblekv"
)

// Engine is the chunk store of one disk. All methods are safe for concurrent
// use. Writers of one key are serialised internally; readers never block
// writers and always see one whole version of a chunk.
type Engine struct {
	dir   string
	opts  Options
	log   *slog.Logger
	db    *pebble.DB
	wal   pebblekv.WALSync // relaxed writes skip the WAL fsync
	alloc *allocator
	ciph  *contentCipher // nil: a plain disk

	shards [numShards]shard
	locks  [numLocks]sync.Mutex

	rereads rereads // chunks read past the page cache lately

	// life is held shared by metadata operations and exclusively by Close,
	// so Close waits for them and none runs on a closed Pebble.
	life   sync.RWMutex
	closed atomic.Bool

	// seg is the disk's checksum segment size (checkFormat).
	seg int64

	// ro: a write failed with an I/O error; writes stay refused until a
	// restart. full: the disk ran out of space; it passes (see full).
	ro       atomic.Bool
	roMu     sync.Mutex
	roReason string
	full     full

	// bad holds keys whose record is corrupt: Get reports ErrChecksum, a
	// Replace or Remove repairs them.
	badMu sync.Mutex
	bad   map[Key]error
	nbad  atomic.Int32

	stop     chan struct{} // ends the syncer
	stopOnce sync.Once
	syncerOn sync.WaitGroup

	chunks         atomic.Int64
	inlineChunks   atomic.Int64
	usedBytes      atomic.Int64
	checksumErrors atomic.Int64
	corruptRecords atomic.Int64
}

// Open opens (creating if needed) the engine in dir. It loads every chunk
// record into memory and rebuilds the free-block bitmaps from them.
func Open(dir string, opts Options) (*Engine, error) {
	opts.setDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: open %s: %w", dir, err)
	}
	e := &Engine{dir: dir, opts: opts, log: opts.Logger.With("engine", dir), bad: map[Key]error{}}
	for i := range e.shards {
		e.shards[i].m = map[Key]*version{}
	}
	db, err := pebble.Open(filepath.Join(dir, "meta"), &pebble.Options{
		Logger:       pebblekv.QuietLogger{},
		CacheSize:    opts.MetaCacheSize,
		MemTableSize: opts.MetaMemTableSize,
		FS:           e.wal.FS(nil),
	})
	if err != nil {
		return nil, fmt.Errorf("engine: open metadata in %s: %w", dir, err)
	}
	e.db = db
	err = e.checkFormat()
	if err == nil && opts.EncryptionKey != nil {
		e.ciph, err = newContentCipher(opts.EncryptionKey)
	}
	if err == nil {
		err = e.checkKey(opts.EncryptionKey)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	e.alloc, err = openAllocator(filepath.Join(dir, "data"), opts.GroupBlocks, opts.MaxGroupBytes, opts.ReserveBytes)
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := e.load(); err != nil {
		e.alloc.close()
		db.Close()
		return nil, err
	}
	e.stop = make(chan struct{})
	if opts.Sync && opts.SyncWindow > 0 {
		e.syncerOn.Add(1)
		go e.syncer()
	}
	return e, nil
}

// syncer makes relaxed writes durable within the sync window.
func (e *Engine) syncer() {
	defer e.syncerOn.Done()
	pebblekv.SyncEvery(e.opts.SyncWindow, e.stop, func() {
		if err := e.Sync(); err != nil && !errors.Is(err, ErrClosed) {
			e.log.Error("engine: background sync", "err", err)
		}
	})
}

// setDurable writes one metadata key, synced.
func (e *Engine) setDurable(key, val []byte) error {
	defer e.wal.Durable()()
	return e.db.Set(key, val, pebble.Sync)
}

// checkFormat reads the disk's format, or writes it on a new disk: the
// segment size comes from the disk, Options.SegmentSize only picks a new
// disk's.
func (e *Engine) checkFormat() error {
	v, closer, err := e.db.Get(formatKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if !ValidSegmentSize(int64(e.opts.SegmentSize)) {
			return fmt.Errorf("engine: segment size %d: want a power of two from %d to %d: %w",
				e.opts.SegmentSize, MinSegmentSize, MaxSegmentSize, ErrInvalid)
		}
		val := binary.LittleEndian.AppendUint32(nil, formatVersion)
		val = binary.LittleEndian.AppendUint32(val, uint32(e.opts.SegmentSize))
		if err := e.setDurable(formatKey, val); err != nil {
			return fmt.Errorf("engine: write format version: %w", err)
		}
		e.seg = int64(e.opts.SegmentSize)
		return nil
	case err != nil:
		return fmt.Errorf("engine: read format version: %w", err)
	}
	defer closer.Close()
	switch {
	case len(v) == 4 && binary.LittleEndian.Uint32(v) == formatLegacy:
		e.seg = MaxSegmentSize
		return nil
	case len(v) == 8 && binary.LittleEndian.Uint32(v) == formatVersion:
		if seg := binary.LittleEndian.Uint32(v[4:]); ValidSegmentSize(int64(seg)) {
			e.seg = int64(seg)
			return nil
		}
	}
	return fmt.Errorf("engine: %s: unsupported format %x: %w", e.dir, v, ErrInvalid)
}

// ValidSegmentSize reports whether seg can be a disk's segment size: a
// power of two from MinSegmentSize to MaxSegmentSize.
func ValidSegmentSize(seg int64) bool {
	return seg >= MinSegmentSize && seg <= MaxSegmentSize && seg&(seg-1) == 0
}

// SegmentSize is the disk's checksum granularity: a read reads and verifies
// whole segments.
func (e *Engine) SegmentSize() int { return int(e.seg) }

// load fills the index and the allocator bitmaps from the records. Corrupt
// records do not fail the open: their keys report ErrChecksum until repaired.
func (e *Engine) load() error {
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixChunk}, UpperBound: []byte{prefixChunk + 1}})
	if err != nil {
		return fmt.Errorf("engine: scan metadata: %w", err)
	}
	owner := map[blockLoc]Key{}
	for ok := it.First(); ok; ok = it.Next() {
		k, kok := decodeKey(it.Key())
		if !kok {
			e.corruptRecords.Add(1)
			e.log.Error("engine: malformed metadata key", "key", fmt.Sprintf("%x", it.Key()))
			continue
		}
		val, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return fmt.Errorf("engine: scan metadata: %w", err)
		}
		r, err := decodeRecord(val, e.seg)
		if err != nil {
			e.markBad(k, err)
			continue
		}
		var b *block
		if r.loc.class == inlineClass {
			e.shard(k).m[k] = &version{meta: r.meta, crcs: r.crcs, inline: true, iv: r.loc.iv}
			e.chunks.Add(1)
			e.inlineChunks.Add(1)
			e.usedBytes.Add(int64(r.meta.Len))
			continue
		}
		if r.meta.Len > 0 {
			if err := e.alloc.markUsed(r.loc); err != nil {
				if other, ok := owner[r.loc.place()]; ok {
					err = fmt.Errorf("%w (%v)", err, other)
				}
				e.markBad(k, err)
				continue
			}
			owner[r.loc.place()] = k
			b = &block{loc: r.loc, written: r.meta.Len}
			b.refs.Store(1)
		}
		e.shard(k).m[k] = &version{meta: r.meta, crcs: r.crcs, blk: b}
		e.chunks.Add(1)
		e.usedBytes.Add(int64(r.meta.Len))
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("engine: scan metadata: %w", err)
	}
	return nil
}

func (e *Engine) markBad(k Key, err error) {
	e.corruptRecords.Add(1)
	e.log.Error("engine: corrupt chunk record", "chunk", k.String(), "err", err)
	e.badMu.Lock()
	if _, ok := e.bad[k]; !ok {
		e.nbad.Add(1)
	}
	e.bad[k] = err
	e.badMu.Unlock()
}

// badErr returns the corruption error of k, or nil.
func (e *Engine) badErr(k Key) error {
	if e.nbad.Load() == 0 {
		return nil
	}
	e.badMu.Lock()
	defer e.badMu.Unlock()
	return e.bad[k]
}

func (e *Engine) clearBad(k Key) {
	if e.nbad.Load() == 0 {
		return
	}
	e.badMu.Lock()
	if _, ok := e.bad[k]; ok {
		delete(e.bad, k)
		e.nbad.Add(-1)
	}
	e.badMu.Unlock()
}

// Close closes the engine. It waits for running updates; Handles still open
// fail their reads with ErrClosed.
func (e *Engine) Close() error {
	e.stopOnce.Do(func() { close(e.stop) })
	e.syncerOn.Wait()
	// A clean stop leaves nothing relaxed to a later crash.
	if err := e.Sync(); err != nil && !errors.Is(err, ErrClosed) {
		e.log.Error("engine: sync at close", "err", err)
	}
	e.life.Lock()
	defer e.life.Unlock()
	if e.closed.Swap(true) {
		return nil
	}
	err := e.db.Close()
	if aerr := e.alloc.close(); err == nil {
		err = aerr
	}
	if err != nil {
		return fmt.Errorf("engine: close %s: %w", e.dir, err)
	}
	return nil
}

// begin enters a metadata operation; end leaves it.
func (e *Engine) begin() error {
	e.life.RLock()
	if e.closed.Load() {
		e.life.RUnlock()
		return ErrClosed
	}
	return nil
}

func (e *Engine) end() { e.life.RUnlock() }

// setReadOnly stops further writes; the first reason sticks.
func (e *Engine) setReadOnly(reason string) {
	e.roMu.Lock()
	defer e.roMu.Unlock()
	if e.ro.Load() {
		return
	}
	e.roReason = reason
	e.ro.Store(true)
	e.log.Error("engine: now read-only", "reason", reason)
}

func (e *Engine) readOnlyReason() string {
	e.roMu.Lock()
	defer e.roMu.Unlock()
	return e.roReason
}

// Get returns a Handle on the current version of k: its metadata and a
// consistent view of its content, valid until Release even if k is updated
// or removed meanwhile. O(1): it only consults the in-memory index.
func (e *Engine) Get(k Key) (*Handle, error) {
	if e.closed.Load() {
		return nil, ErrClosed
	}
	sh := e.shard(k)
	sh.mu.RLock()
	v := sh.m[k]
	if v != nil && v.blk != nil {
		v.blk.refs.Add(1) // under the shard lock: v is current, so refs >= 1
	}
	sh.mu.RUnlock()
	if v == nil {
		if err := e.badErr(k); err != nil {
			return nil, fmt.Errorf("engine: get %v: %w", k, err)
		}
		return nil, fmt.Errorf("engine: get %v: %w", k, ErrNotFound)
	}
	if v.inline {
		if err := e.begin(); err != nil {
			return nil, err
		}
		defer e.end()
		v, content, err := e.inlineHandleContent(k, v)
		if err != nil {
			return nil, err
		}
		return &Handle{e: e, key: k, v: v, content: content}, nil
	}
	return &Handle{e: e, key: k, v: v}, nil
}

// GetMeta returns the metadata of k without pinning its content.
func (e *Engine) GetMeta(k Key) (Meta, error) {
	if e.closed.Load() {
		return Meta{}, ErrClosed
	}
	if v := e.current(k); v != nil {
		return v.meta, nil
	}
	if err := e.badErr(k); err != nil {
		return Meta{}, fmt.Errorf("engine: get %v: %w", k, err)
	}
	return Meta{}, fmt.Errorf("engine: get %v: %w", k, ErrNotFound)
}
