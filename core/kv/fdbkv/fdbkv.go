//go:build fdb

package fdbkv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/apple/foundationdb/bindings/go/src/fdb"
	"github.com/flyfs/flyfs/core/kv"
)

// Available reports whether this binary was built with FoundationDB support.
const Available = true

var apiOnce sync.Once

// Open connects to the FoundationDB cluster.
func Open(ctx context.Context, opts Options, kvOpts kv.Options) (*kv.DB, error) {
	var apiErr error
	apiOnce.Do(func() { apiErr = fdb.APIVersion(730) })
	if apiErr != nil {
		return nil, fmt.Errorf("fdbkv: api version: %w", apiErr)
	}
	db, err := fdb.OpenDatabase(opts.ClusterFile)
	if err != nil {
		return nil, fmt.Errorf("fdbkv: open %q: %w", opts.ClusterFile, err)
	}
	if opts.Prefix == nil {
		opts.Prefix = []byte("flyfs/")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10e9
	}
	return kv.New(&engine{db: db, prefix: opts.Prefix, timeoutMs: opts.Timeout.Milliseconds()}, kvOpts), nil
}

type engine struct {
	db        fdb.Database
	prefix    []byte
	timeoutMs int64
}

func (e *engine) key(k []byte) fdb.Key {
	out := make([]byte, 0, len(e.prefix)+len(k))
	return append(append(out, e.prefix...), k...)
}

func (e *engine) end(k []byte) fdb.Key {
	if k == nil {
		return fdb.Key(kv.PrefixEnd(e.prefix))
	}
	return e.key(k)
}

func (e *engine) Snapshot(ctx context.Context) (kv.Snapshot, error) {
	tr, err := e.db.CreateTransaction()
	if err != nil {
		return nil, mapErr(err)
	}
	if err := tr.Options().SetTimeout(e.timeoutMs); err != nil {
		return nil, mapErr(err)
	}
	rv, err := tr.GetReadVersion().Get()
	if err != nil {
		tr.Cancel()
		return nil, mapErr(err)
	}
	return &snapshot{e: e, tr: tr, rv: rv}, nil
}

func (e *engine) Close() error {
	e.db.Close()
	return nil
}

type snapshot struct {
	e  *engine
	tr fdb.Transaction
	rv int64
}

func (s *snapshot) Version() int64 { return s.rv }
func (s *snapshot) Release()       { s.tr.Cancel() }

func (s *snapshot) Get(ctx context.Context, key []byte) ([]byte, bool, error) {
	v, err := s.tr.Snapshot().Get(s.e.key(key)).Get()
	if err != nil {
		return nil, false, mapErr(err)
	}
	return v, v != nil, nil
}

func (s *snapshot) Scan(ctx context.Context, begin, end []byte, limit int, reverse bool) ([]kv.KeyValue, bool, error) {
	r := fdb.KeyRange{Begin: s.e.key(begin), End: s.e.end(end)}
	// Ask for one more than the limit to learn whether more remain.
	kvs, err := s.tr.Snapshot().GetRange(r, fdb.RangeOptions{Limit: limit + 1, Reverse: reverse, Mode: fdb.StreamingModeWantAll}).GetSliceWithError()
	if err != nil {
		return nil, false, mapErr(err)
	}
	more := len(kvs) > limit
	if more {
		kvs = kvs[:limit]
	}
	out := make([]kv.KeyValue, len(kvs))
	for i, x := range kvs {
		out[i] = kv.KeyValue{Key: bytes.Clone(x.Key[len(s.e.prefix):]), Value: x.Value}
		if out[i].Value == nil {
			out[i].Value = []byte{}
		}
	}
	return out, more, nil
}

func (e *engine) Commit(ctx context.Context, req *kv.CommitRequest) (int64, error) {
	var tr fdb.Transaction
	if s, ok := req.Snapshot.(*snapshot); ok && s != nil {
		tr = s.tr
	} else {
		var err error
		if tr, err = e.db.CreateTransaction(); err != nil {
			return 0, mapErr(err)
		}
		defer tr.Cancel()
	}
	for _, k := range req.ReadKeys {
		if err := tr.AddReadConflictKey(e.key(k)); err != nil {
			return 0, mapErr(err)
		}
	}
	for _, r := range req.ReadRanges {
		if err := tr.AddReadConflictRange(fdb.KeyRange{Begin: e.key(r.Begin), End: e.end(r.End)}); err != nil {
			return 0, mapErr(err)
		}
	}
	for _, r := range req.ClearRanges {
		tr.ClearRange(fdb.KeyRange{Begin: e.key(r.Begin), End: e.end(r.End)})
	}
	for _, k := range req.Clears {
		tr.Clear(e.key(k))
	}
	for _, x := range req.Sets {
		tr.Set(e.key(x.Key), x.Value)
	}
	for _, op := range req.Stamped {
		// FDB takes the stamp's offset as 4 little-endian bytes after the operand.
		var off [4]byte
		if op.InKey {
			binary.LittleEndian.PutUint32(off[:], uint32(len(e.prefix)+op.Offset))
			tr.SetVersionstampedKey(append(e.key(op.Key), off[:]...), op.Value)
		} else {
			binary.LittleEndian.PutUint32(off[:], uint32(op.Offset))
			tr.SetVersionstampedValue(e.key(op.Key), append(bytes.Clone(op.Value), off[:]...))
		}
	}
	var stampF fdb.FutureKey
	if len(req.Stamped) > 0 {
		stampF = tr.GetVersionstamp()
	}
	if err := tr.Commit().Get(); err != nil {
		return 0, mapErr(err)
	}
	v, err := tr.GetCommittedVersion()
	if err != nil {
		return 0, mapErr(err)
	}
	if stampF != nil {
		st, err := stampF.Get()
		if err != nil {
			return 0, mapErr(err)
		}
		req.Stamp = []byte(st)
	}
	return v, nil
}

// mapErr maps FoundationDB error codes onto kv codes.
func mapErr(err error) error {
	var fe fdb.Error
	if !errors.As(err, &fe) {
		return kv.Wrap(kv.CodeRetryable, err, "fdb")
	}
	switch fe.Code {
	case 1020: // not_committed
		return kv.Wrap(kv.CodeConflict, err, "fdb")
	case 1007: // transaction_too_old
		return kv.Wrap(kv.CodeTooOld, err, "fdb")
	case 1021: // commit_unknown_result
		return kv.Wrap(kv.CodeMaybeCommitted, err, "fdb")
	case 2101: // transaction_too_large
		return kv.Wrap(kv.CodeTxnTooLarge, err, "fdb")
	case 2102: // key_too_large
		return kv.Wrap(kv.CodeKeyTooLarge, err, "fdb")
	case 2103: // value_too_large
		return kv.Wrap(kv.CodeValueTooLarge, err, "fdb")
	case 1031, 1004: // transaction_timed_out, timed_out
		return kv.Wrap(kv.CodeTxnTooLong, err, "fdb")
	case 1009, 1037, 1038, 1213, 1078, 1042: // future_version, process_behind, database_locked, tag_throttled, batch_transaction_throttled, proxy_memory_limit
		return kv.Wrap(kv.CodeRetryable, err, "fdb")
	}
	return kv.Wrap(kv.CodeInvalid, err, "fdb")
}
