// Package pebblekv is the embedded, durable KV engine on Pebble: the default
// engine of `flyfs server`.
//
// Serializability is optimistic, as in FoundationDB: a transaction reads from a
// Pebble snapshot at its read version and, at commit, the shared resolver checks
// its read set against the writes of every commit after that version. Commits are
// ordered by one lock that covers the conflict check, the version assignment and
// the hand-off of the batch to Pebble's commit pipeline (ApplyNoSyncWait), so
// Pebble's visibility order is exactly our version order and a snapshot taken
// under the same lock is exactly "every commit up to version v". The WAL fsync is
// awaited outside the lock, so concurrent commits share fsyncs (group commit).
// Neither Pebble's apply nor its WAL sync takes a context, so a commit runs in
// a goroutine of its own and its caller stops waiting at its deadline with
// ErrMaybeCommitted: a disk that stops answering fails requests, it does not
// hold them.
// A commit is acknowledged only after its fsync, except a relaxed one
// (durability.Relaxed, with SyncWindow set) and every one under NoSync. Those are
// acknowledged once Pebble has written their WAL record to the file: the
// WAL file's syncs reach the disk only while a durable commit or a Sync
// waits (WALSync), so a process crash loses nothing and a machine crash
// may lose the relaxed commits since the last sync. A background sync
// makes them durable within SyncWindow; Sync (fsync on a mount) at once.
// The WAL is one log in commit order, so a sync covers every commit before
// it, and what a machine crash leaves is a prefix of the commits.
//
// On-disk keys: 0x01 + user key for data; 0x00 + "version" holds the last
// commit version, written in every commit batch so versions (and so
// versionstamps) keep growing across restarts.
package pebblekv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/conflict"
)

// Options configure the engine.
type Options struct {
	// NoSync acknowledges every commit before the WAL is fsynced, and
	// syncs only on Sync: faster, and a machine crash (not a process
	// crash) may lose the last commits.
	NoSync bool
	// SyncWindow, when positive, lets relaxed commits (durability.Relaxed) be
	// acknowledged before the WAL fsync: a background sync makes them
	// durable within this window. Zero syncs relaxed commits as any other.
	SyncWindow time.Duration
	// CacheBytes is Pebble's block cache size; default 64 MiB.
	CacheBytes int64
	// MemTableBytes is Pebble's memtable size; default 4 MiB. A larger one
	// makes every point read slower as it fills (a seek in a skiplist
	// spread over tens of MiB misses the CPU caches at each level): at
	// 64 MiB, a metad create's transaction went from 90 to 175 µs over
	// 15,000 files, where at 4 MiB it stays near 80 µs, flushed tables
	// being read through bloom filters and the block cache.
	MemTableBytes uint64
	// KV bounds transactions and configures retries.
	KV kv.Options
	// FS is the file system under the store (nil: the operating system's);
	// tests crash an in-memory one.
	FS vfs.FS
}

var (
	dataPrefix = []byte{0x01}
	versionKey = []byte("\x00version")
)

type engine struct {
	db    *pebble.DB
	cache *pebble.Cache
	sync  bool
	// order is the lock that orders commits (see the package comment): a
	// one-slot channel, so a caller waiting behind a commit that Pebble
	// holds up (a write stall, a WAL device that does not answer) gives up
	// at its deadline.
	order    chan struct{}
	version  int64
	resolver *conflict.Resolver

	// window is Options.SyncWindow (0: relaxed commits are synced); wal
	// skips the fsync of commits not made durable; the syncer goroutine
	// runs until stop is closed.
	window   time.Duration
	wal      WALSync
	stop     chan struct{}
	stopOnce sync.Once
	syncerOn sync.WaitGroup

	// life guards closing: every use of Pebble holds it shared, Close holds it
	// exclusively, so nothing touches a closed Pebble (which would panic).
	life   sync.RWMutex
	closed bool
	openMu sync.Mutex
	open   map[*snapshot]struct{} // snapshots to close before Pebble; under openMu
}

// Open opens (or creates) the engine in dir.
func Open(dir string, opts Options) (*kv.DB, error) {
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 64 << 20
	}
	if opts.MemTableBytes == 0 {
		opts.MemTableBytes = 4 << 20
	}
	e := &engine{cache: pebble.NewCache(opts.CacheBytes), sync: !opts.NoSync, resolver: conflict.New(10 * time.Second),
		order: make(chan struct{}, 1), open: map[*snapshot]struct{}{}, window: max(opts.SyncWindow, 0), stop: make(chan struct{})}
	popts := &pebble.Options{Cache: e.cache, Logger: QuietLogger{}, FS: e.wal.FS(opts.FS), MemTableSize: opts.MemTableBytes}
	// Bloom filters on every level (the lower ones inherit L0's): most of
	// metad's reads are point reads, many of keys that are absent (a new
	// name's dirent, a free inode id, the freeze key), which a filter
	// answers without reading a table's index.
	popts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	db, err := pebble.Open(dir, popts)
	if err != nil {
		e.cache.Unref()
		// Another process holds the lock (EAGAIN), or this one does.
		if errors.Is(err, syscall.EAGAIN) || strings.Contains(err.Error(), "lock held") {
			return nil, fmt.Errorf("pebblekv: %s is in use by another flyfs process or store (its lock is held): %w", dir, err)
		}
		return nil, fmt.Errorf("pebblekv: open %s: %w", dir, err)
	}
	e.db = db
	v, closer, err := db.Get(versionKey)
	switch {
	case err == nil:
		if len(v) == 8 {
			e.version = int64(binary.BigEndian.Uint64(v))
		}
		closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		db.Close()
		e.cache.Unref()
		return nil, fmt.Errorf("pebblekv: read version: %w", err)
	}
	if e.window > 0 && e.sync {
		e.syncerOn.Add(1)
		go e.syncer()
	}
	return kv.New(e, opts.KV), nil
}

// syncer makes relaxed commits durable within the window.
func (e *engine) syncer() {
	defer e.syncerOn.Done()
	SyncEvery(e.window, e.stop, func() {
		if err := e.Sync(context.Background()); err != nil && !errors.Is(err, kv.ErrClosed) {
			pebble.DefaultLogger.Errorf("pebblekv: background WAL sync: %v", err)
		}
	})
}

// Sync makes every commit acknowledged before it durable.
func (e *engine) Sync(ctx context.Context) error {
	if !e.wal.Pending() {
		return nil
	}
	err, ok := untilDone(ctx, func() error {
		e.life.RLock()
		defer e.life.RUnlock()
		if e.closed {
			return kv.ErrClosed
		}
		if err := e.wal.Sync(e.db); err != nil {
			return fmt.Errorf("pebblekv: WAL sync: %w", err)
		}
		return nil
	})
	if !ok {
		return fmt.Errorf("pebblekv: the WAL sync did not finish in time: %w", ctx.Err())
	}
	return err
}

// untilDone runs f in a goroutine of its own and waits for it until ctx
// ends (ok false); a result ready as ctx ends is still taken.
func untilDone[T any](ctx context.Context, f func() T) (r T, ok bool) {
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case r = <-done:
		return r, true
	case <-ctx.Done():
		select {
		case r = <-done:
			return r, true
		default:
			return r, false
		}
	}
}

func dataKey(k []byte) []byte {
	out := make([]byte, 1+len(k))
	out[0] = dataPrefix[0]
	copy(out[1:], k)
	return out
}

// dataEnd maps a user range end (nil: the end of user keys) to a Pebble key.
func dataEnd(k []byte) []byte {
	if k == nil {
		return []byte{dataPrefix[0] + 1}
	}
	return dataKey(k)
}

func (e *engine) Snapshot(ctx context.Context) (kv.Snapshot, error) {
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed {
		return nil, kv.ErrClosed
	}
	if err := e.lockOrder(ctx); err != nil {
		return nil, err
	}
	s := &snapshot{e: e, snap: e.db.NewSnapshot(), rv: e.version}
	e.unlockOrder()
	e.openMu.Lock()
	e.open[s] = struct{}{}
	e.openMu.Unlock()
	return s, nil
}

// lockOrder takes the commit order lock, or fails when ctx ends first.
func (e *engine) lockOrder(ctx context.Context) error {
	select {
	case e.order <- struct{}{}:
		return nil
	case <-ctx.Done():
		return kv.Wrap(kv.CodeRetryable, ctx.Err(), "pebblekv: waiting behind a commit the store holds up")
	}
}

func (e *engine) unlockOrder() { <-e.order }

// Commit applies req apart (untilDone), so a store whose disk stops
// answering (or that stalls writes) fails a commit at its deadline rather
// than holding it. A commit given up on may still be applied later, so it
// reports ErrMaybeCommitted.
func (e *engine) Commit(ctx context.Context, req *kv.CommitRequest) (int64, error) {
	// The batch copies the writes before the caller can give up; req itself
	// is built for this one attempt and not touched after it.
	batch := e.db.NewBatch()
	for _, r := range req.ClearRanges {
		if err := batch.DeleteRange(dataKey(r.Begin), dataEnd(r.End), nil); err != nil {
			batch.Close()
			return 0, err
		}
	}
	for _, k := range req.Clears {
		batch.Delete(dataKey(k), nil)
	}
	for _, x := range req.Sets {
		batch.Set(dataKey(x.Key), x.Value, nil)
	}
	type result struct {
		v   int64
		err error
	}
	r, ok := untilDone(ctx, func() result {
		defer batch.Close()
		v, err := e.commit(ctx, req, batch)
		return result{v, err}
	})
	if !ok {
		return 0, kv.Wrap(kv.CodeMaybeCommitted, ctx.Err(), "pebblekv: the store did not finish the commit in time")
	}
	return r.v, r.err
}

func (e *engine) commit(ctx context.Context, req *kv.CommitRequest, batch *pebble.Batch) (int64, error) {
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed {
		return 0, kv.ErrClosed
	}
	if err := e.lockOrder(ctx); err != nil {
		return 0, err
	}
	if err := e.resolver.Check(req); err != nil {
		e.unlockOrder()
		return 0, err
	}
	v := e.version + 1
	req.Stamp = kv.MakeStamp(v, 0)
	for _, op := range req.Stamped {
		k, val := op.Resolve(req.Stamp)
		batch.Set(dataKey(k), val, nil)
	}
	var vb [8]byte
	binary.BigEndian.PutUint64(vb[:], uint64(v))
	batch.Set(versionKey, vb[:], nil)
	if req.Relaxed && req.InProcess && e.window > 0 {
		// Its caller dies with this process: acknowledged once applied,
		// its WAL record queued behind every earlier one (a later sync
		// covers it).
		err := e.db.Apply(batch, pebble.NoSync)
		if err == nil {
			e.wal.Queued()
			e.resolver.Record(v, req.WriteKeys(req.Stamp), req.ClearRanges, time.Now())
			e.version = v
		}
		e.unlockOrder()
		if err != nil {
			return 0, kv.Wrap(kv.CodeMaybeCommitted, err, "pebble apply")
		}
		return v, nil
	}
	// Every other commit waits for its WAL record to be written; only a
	// durable one makes that wait include the fsync (WALSync).
	if e.sync && !(req.Relaxed && e.window > 0) {
		defer e.wal.Durable()()
	}
	err := e.db.ApplyNoSyncWait(batch, pebble.Sync)
	if err != nil {
		e.unlockOrder()
		return 0, kv.Wrap(kv.CodeMaybeCommitted, err, "pebble apply")
	}
	e.resolver.Record(v, req.WriteKeys(req.Stamp), req.ClearRanges, time.Now())
	e.version = v
	e.unlockOrder()

	if err := batch.SyncWait(); err != nil {
		return 0, kv.Wrap(kv.CodeMaybeCommitted, err, "pebble WAL write")
	}
	return v, nil
}

func (e *engine) Close() error {
	e.life.Lock()
	if e.closed {
		e.life.Unlock()
		return nil
	}
	e.stopOnce.Do(func() { close(e.stop) })
	e.life.Unlock()
	e.syncerOn.Wait()
	// A clean stop leaves nothing to a later crash.
	if err := e.Sync(context.Background()); err != nil && !errors.Is(err, kv.ErrClosed) {
		pebble.DefaultLogger.Errorf("pebblekv: WAL sync at close: %v", err)
	}
	e.life.Lock()
	defer e.life.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	for s := range e.open {
		s.snap.Close()
	}
	err := e.db.Close()
	e.cache.Unref()
	return err
}

type snapshot struct {
	e    *engine
	snap *pebble.Snapshot
	rv   int64
}

func (s *snapshot) Version() int64 { return s.rv }

func (s *snapshot) Release() {
	s.e.life.RLock()
	defer s.e.life.RUnlock()
	if s.e.closed {
		return // Close closed it
	}
	s.e.openMu.Lock()
	_, open := s.e.open[s]
	delete(s.e.open, s)
	s.e.openMu.Unlock()
	if open {
		s.snap.Close()
	}
}

func (s *snapshot) Get(ctx context.Context, key []byte) ([]byte, bool, error) {
	s.e.life.RLock()
	defer s.e.life.RUnlock()
	if s.e.closed {
		return nil, false, kv.ErrClosed
	}
	v, closer, err := s.snap.Get(dataKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("pebblekv: get: %w", err)
	}
	out := bytes.Clone(v)
	if out == nil {
		out = []byte{}
	}
	closer.Close()
	return out, true, nil
}

func (s *snapshot) Scan(ctx context.Context, begin, end []byte, limit int, reverse bool) ([]kv.KeyValue, bool, error) {
	s.e.life.RLock()
	defer s.e.life.RUnlock()
	if s.e.closed {
		return nil, false, kv.ErrClosed
	}
	it, err := s.snap.NewIter(&pebble.IterOptions{LowerBound: dataKey(begin), UpperBound: dataEnd(end)})
	if err != nil {
		return nil, false, fmt.Errorf("pebblekv: scan: %w", err)
	}
	var out []kv.KeyValue
	valid := it.First
	step := it.Next
	if reverse {
		valid, step = it.Last, it.Prev
	}
	ok := valid()
	for ; ok && len(out) < limit; ok = step() {
		out = append(out, kv.KeyValue{Key: bytes.Clone(it.Key()[1:]), Value: append([]byte{}, it.Value()...)})
	}
	more := ok
	if err := it.Close(); err != nil {
		return nil, false, fmt.Errorf("pebblekv: scan: %w", err)
	}
	return out, more, nil
}

// QuietLogger drops Pebble's informational chatter and keeps its errors.
type QuietLogger struct{}

func (QuietLogger) Infof(format string, args ...any) {}
func (QuietLogger) Errorf(format string, args ...any) {
	pebble.DefaultLogger.Errorf(format, args...)
}
func (QuietLogger) Fatalf(format string, args ...any) {
	pebble.DefaultLogger.Fatalf(format, args...)
}
