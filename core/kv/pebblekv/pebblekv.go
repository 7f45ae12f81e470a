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
// A commit is acknowledged only after its fsync (unless NoSync is set).
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
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/conflict"
)

// Options configure the engine.
type Options struct {
	// NoSync acknowledges commits before the WAL is fsynced: faster, and a
	// machine crash (not a process crash) may lose the last commits.
	NoSync bool
	// CacheBytes is Pebble's block cache size; default 64 MiB.
	CacheBytes int64
	// KV bounds transactions and configures retries.
	KV kv.Options
}

var (
	dataPrefix = []byte{0x01}
	versionKey = []byte("\x00version")
)

type engine struct {
	db       *pebble.DB
	cache    *pebble.Cache
	sync     bool
	mu       sync.Mutex // orders commits; see the package comment
	version  int64
	resolver *conflict.Resolver

	// life guards closing: every use of Pebble holds it shared, Close holds it
	// exclusively, so nothing touches a closed Pebble (which would panic).
	life   sync.RWMutex
	closed bool
	open   map[*snapshot]struct{} // snapshots to close before Pebble
}

// Open opens (or creates) the engine in dir.
func Open(dir string, opts Options) (*kv.DB, error) {
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 64 << 20
	}
	cache := pebble.NewCache(opts.CacheBytes)
	db, err := pebble.Open(dir, &pebble.Options{Cache: cache, Logger: QuietLogger{}})
	if err != nil {
		cache.Unref()
		// Another process holds the lock (EAGAIN), or this one does.
		if errors.Is(err, syscall.EAGAIN) || strings.Contains(err.Error(), "lock held") {
			return nil, fmt.Errorf("pebblekv: %s is in use by another flyfs process or store (its lock is held): %w", dir, err)
		}
		return nil, fmt.Errorf("pebblekv: open %s: %w", dir, err)
	}
	e := &engine{db: db, cache: cache, sync: !opts.NoSync, resolver: conflict.New(10 * time.Second),
		open: map[*snapshot]struct{}{}}
	v, closer, err := db.Get(versionKey)
	switch {
	case err == nil:
		if len(v) == 8 {
			e.version = int64(binary.BigEndian.Uint64(v))
		}
		closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		db.Close()
		cache.Unref()
		return nil, fmt.Errorf("pebblekv: read version: %w", err)
	}
	return kv.New(e, opts.KV), nil
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
	e.mu.Lock()
	s := &snapshot{e: e, snap: e.db.NewSnapshot(), rv: e.version}
	e.open[s] = struct{}{}
	e.mu.Unlock()
	return s, nil
}

func (e *engine) Commit(ctx context.Context, req *kv.CommitRequest) (int64, error) {
	batch := e.db.NewBatch()
	defer batch.Close()
	for _, r := range req.ClearRanges {
		if err := batch.DeleteRange(dataKey(r.Begin), dataEnd(r.End), nil); err != nil {
			return 0, err
		}
	}
	for _, k := range req.Clears {
		batch.Delete(dataKey(k), nil)
	}
	for _, x := range req.Sets {
		batch.Set(dataKey(x.Key), x.Value, nil)
	}

	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed {
		return 0, kv.ErrClosed
	}
	e.mu.Lock()
	if err := e.resolver.Check(req); err != nil {
		e.mu.Unlock()
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
	var err error
	if e.sync {
		err = e.db.ApplyNoSyncWait(batch, pebble.Sync)
	} else {
		err = e.db.Apply(batch, pebble.NoSync)
	}
	if err != nil {
		e.mu.Unlock()
		return 0, kv.Wrap(kv.CodeMaybeCommitted, err, "pebble apply")
	}
	e.resolver.Record(v, req.WriteKeys(req.Stamp), req.ClearRanges, time.Now())
	e.version = v
	e.mu.Unlock()

	if e.sync {
		if err := batch.SyncWait(); err != nil {
			return 0, kv.Wrap(kv.CodeMaybeCommitted, err, "pebble WAL sync")
		}
	}
	return v, nil
}

func (e *engine) Close() error {
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
	s.e.mu.Lock()
	_, open := s.e.open[s]
	delete(s.e.open, s)
	s.e.mu.Unlock()
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
