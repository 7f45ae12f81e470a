// Package memkv is the in-memory KV engine, for unit tests: multi-version
// entries in a B-tree, reads at a version, and the shared conflict resolver.
package memkv

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/conflict"
	"github.com/google/btree"
)

// version is one value of a key; deleted marks a tombstone.
type version struct {
	v       int64
	value   []byte
	deleted bool
}

// entry is a key with its versions, oldest first.
type entry struct {
	key      []byte
	versions []version
}

// visible returns the newest version at or before rv.
func (e *entry) visible(rv int64) (version, bool) {
	for i := len(e.versions) - 1; i >= 0; i-- {
		if e.versions[i].v <= rv {
			return e.versions[i], true
		}
	}
	return version{}, false
}

type store struct {
	mu       sync.RWMutex
	tree     *btree.BTreeG[*entry]
	version  int64
	resolver *conflict.Resolver
	closed   bool
}

// Open returns an empty in-memory DB.
func Open(opts kv.Options) *kv.DB {
	s := &store{
		tree:     btree.NewG(32, func(a, b *entry) bool { return bytes.Compare(a.key, b.key) < 0 }),
		resolver: conflict.New(10 * time.Second),
	}
	return kv.New(s, opts)
}

func (s *store) Snapshot(ctx context.Context) (kv.Snapshot, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, kv.ErrClosed
	}
	return &snapshot{s: s, rv: s.version}, nil
}

func (s *store) Commit(ctx context.Context, req *kv.CommitRequest) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, kv.ErrClosed
	}
	if err := s.resolver.Check(req); err != nil {
		return 0, err
	}
	v := s.version + 1
	req.Stamp = kv.MakeStamp(v, 0)
	horizon := s.resolver.Horizon()
	for _, r := range req.ClearRanges {
		var hit []*entry
		s.ascend(r, func(e *entry) bool { hit = append(hit, e); return true })
		for _, e := range hit {
			s.put(e.key, version{v: v, deleted: true}, horizon)
		}
	}
	for _, k := range req.Clears {
		s.put(k, version{v: v, deleted: true}, horizon)
	}
	for _, x := range req.Sets {
		s.put(x.Key, version{v: v, value: x.Value}, horizon)
	}
	for _, op := range req.Stamped {
		k, val := op.Resolve(req.Stamp)
		s.put(k, version{v: v, value: val}, horizon)
	}
	s.resolver.Record(v, req.WriteKeys(req.Stamp), req.ClearRanges, time.Now())
	s.version = v
	return v, nil
}

// put adds a version to key, dropping versions no reader can see any more
// (older than the newest one at or before the horizon).
func (s *store) put(key []byte, nv version, horizon int64) {
	e, ok := s.tree.Get(&entry{key: key})
	if !ok {
		if nv.deleted {
			return
		}
		e = &entry{key: key}
		s.tree.ReplaceOrInsert(e)
	}
	keep := 0
	for i, x := range e.versions {
		if x.v <= horizon {
			keep = i
		}
	}
	e.versions = append(e.versions[keep:], nv)
}

func (s *store) ascend(r kv.KeyRange, fn func(*entry) bool) {
	if r.End == nil {
		s.tree.AscendGreaterOrEqual(&entry{key: r.Begin}, fn)
		return
	}
	s.tree.AscendRange(&entry{key: r.Begin}, &entry{key: r.End}, fn)
}

func (s *store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

type snapshot struct {
	s  *store
	rv int64
}

func (sn *snapshot) Version() int64 { return sn.rv }
func (sn *snapshot) Release()       {}

func (sn *snapshot) check() error {
	if sn.s.closed {
		return kv.ErrClosed
	}
	if sn.rv < sn.s.resolver.Horizon() {
		return kv.Errorf(kv.CodeTooOld, "read version %d was pruned", sn.rv)
	}
	return nil
}

func (sn *snapshot) Get(ctx context.Context, key []byte) ([]byte, bool, error) {
	sn.s.mu.RLock()
	defer sn.s.mu.RUnlock()
	if err := sn.check(); err != nil {
		return nil, false, err
	}
	e, ok := sn.s.tree.Get(&entry{key: key})
	if !ok {
		return nil, false, nil
	}
	x, ok := e.visible(sn.rv)
	if !ok || x.deleted {
		return nil, false, nil
	}
	return bytes.Clone(x.value), true, nil
}

func (sn *snapshot) Scan(ctx context.Context, begin, end []byte, limit int, reverse bool) ([]kv.KeyValue, bool, error) {
	sn.s.mu.RLock()
	defer sn.s.mu.RUnlock()
	if err := sn.check(); err != nil {
		return nil, false, err
	}
	var out []kv.KeyValue
	more := false
	visit := func(e *entry) bool {
		x, ok := e.visible(sn.rv)
		if !ok || x.deleted {
			return true
		}
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, kv.KeyValue{Key: bytes.Clone(e.key), Value: bytes.Clone(x.value)})
		return true
	}
	if !reverse {
		sn.s.ascend(kv.KeyRange{Begin: begin, End: end}, visit)
		return out, more, nil
	}
	// Descend from just below end down to begin.
	stop := func(e *entry) bool {
		if bytes.Compare(e.key, begin) < 0 {
			return false
		}
		return visit(e)
	}
	if end == nil {
		sn.s.tree.Descend(stop)
	} else {
		sn.s.tree.DescendLessOrEqual(&entry{key: end}, func(e *entry) bool {
			if bytes.Equal(e.key, end) {
				return true
			}
			return stop(e)
		})
	}
	return out, more, nil
}
