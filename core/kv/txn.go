package kv

import (
	"bytes"
	"context"
	"fmt"
	"github.com/flyfs/flyfs/core/durability"
	"time"
)

// RangeOptions shape a range read. Limit 0 means no limit.
type RangeOptions struct {
	Limit   int
	Reverse bool
}

// RangeResult is one page of a range read; More says entries remain past it.
type RangeResult struct {
	KVs  []KeyValue
	More bool
}

// ReadTxn is a read-only transaction: every read sees one consistent version.
type ReadTxn interface {
	// Get returns the value of key; found is false when the key is absent.
	Get(ctx context.Context, key []byte) (value []byte, found bool, err error)
	// SnapshotGet is Get without adding key to the read-conflict set.
	SnapshotGet(ctx context.Context, key []byte) (value []byte, found bool, err error)
	// GetRange reads [begin, end) in key order (nil end: to the end). In a
	// read-write transaction the span actually read becomes a read-conflict range:
	// all of it, or up to the last returned key when the limit cut the read.
	GetRange(ctx context.Context, begin, end []byte, opts RangeOptions) (RangeResult, error)
	// SnapshotGetRange is GetRange without adding a read-conflict range.
	SnapshotGetRange(ctx context.Context, begin, end []byte, opts RangeOptions) (RangeResult, error)
	// ReadVersion returns the version the transaction reads at.
	ReadVersion(ctx context.Context) (int64, error)
	// Cancel ends the transaction, discarding its writes. Safe to call twice.
	Cancel()
}

// Txn is a read-write transaction. Writes are buffered and applied atomically
// by Commit; reads see them. Errors of writes (a key too large, the size bound)
// stick to the transaction and are returned by Commit.
type Txn interface {
	ReadTxn
	AddReadConflict(key []byte)
	AddReadConflictRange(begin, end []byte)
	Set(key, value []byte)
	Clear(key []byte)
	ClearRange(begin, end []byte)
	// SetVersionstampedKey sets key, with StampLen bytes at offset replaced by the
	// commit's versionstamp, to value. Such keys are not visible to this
	// transaction's own reads.
	SetVersionstampedKey(key []byte, offset int, value []byte)
	// SetVersionstampedValue sets key to value with the stamp at offset.
	SetVersionstampedValue(key, value []byte, offset int)
	Commit(ctx context.Context) error
	// CommittedVersion is the commit version after a successful Commit, -1 for a
	// commit that wrote nothing.
	CommittedVersion() int64
	// Versionstamp is the stamp written by SetVersionstamped*, after Commit.
	Versionstamp() []byte
}

type txn struct {
	db       *DB
	readOnly bool
	ws       *writeSet
	start    time.Time

	snap       Snapshot
	readKeys   [][]byte
	readRanges []KeyRange

	size    int
	stamp   []byte
	err     error // sticky
	done    bool
	version int64
}

func (t *txn) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// usable reports the error that prevents any further operation.
func (t *txn) usable() error {
	if t.done {
		return ErrTxnDone
	}
	if t.err != nil {
		return t.err
	}
	if t.db.closed.Load() {
		return ErrClosed
	}
	if d := time.Since(t.start); d > t.db.opts.MaxTxnDuration {
		t.fail(Errorf(CodeTxnTooLong, "ran %v, the bound is %v", d.Round(time.Millisecond), t.db.opts.MaxTxnDuration))
		return t.err
	}
	return nil
}

func (t *txn) snapshot(ctx context.Context) (Snapshot, error) {
	if t.snap != nil {
		return t.snap, nil
	}
	if err := t.db.faults.readFault(); err != nil {
		return nil, err
	}
	s, err := t.db.be.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	t.snap = s
	return s, nil
}

func (t *txn) ReadVersion(ctx context.Context) (int64, error) {
	if err := t.usable(); err != nil {
		return 0, err
	}
	s, err := t.snapshot(ctx)
	if err != nil {
		return 0, err
	}
	return s.Version(), nil
}

func (t *txn) Get(ctx context.Context, key []byte) ([]byte, bool, error) {
	return t.get(ctx, key, false)
}

func (t *txn) SnapshotGet(ctx context.Context, key []byte) ([]byte, bool, error) {
	return t.get(ctx, key, true)
}

func (t *txn) get(ctx context.Context, key []byte, snapshot bool) ([]byte, bool, error) {
	if err := t.usable(); err != nil {
		return nil, false, err
	}
	if v, found, known := t.ws.lookup(key); known {
		return v, found, nil
	}
	if err := t.db.faults.readFault(); err != nil {
		return nil, false, err
	}
	s, err := t.snapshot(ctx)
	if err != nil {
		return nil, false, err
	}
	v, found, err := s.Get(ctx, key)
	if err != nil {
		return nil, false, err
	}
	if !snapshot && !t.readOnly {
		t.addReadKey(bytes.Clone(key))
	}
	return v, found, nil
}

func (t *txn) GetRange(ctx context.Context, begin, end []byte, opts RangeOptions) (RangeResult, error) {
	return t.getRange(ctx, begin, end, opts, false)
}

func (t *txn) SnapshotGetRange(ctx context.Context, begin, end []byte, opts RangeOptions) (RangeResult, error) {
	return t.getRange(ctx, begin, end, opts, true)
}

func (t *txn) getRange(ctx context.Context, begin, end []byte, opts RangeOptions, snapshot bool) (RangeResult, error) {
	if err := t.usable(); err != nil {
		return RangeResult{}, err
	}
	if opts.Limit < 0 {
		return RangeResult{}, Errorf(CodeInvalid, "negative range limit %d", opts.Limit)
	}
	if begin == nil {
		begin = []byte{}
	}
	r := KeyRange{Begin: begin, End: end}
	if r.Empty() {
		return RangeResult{}, nil
	}
	if err := t.db.faults.readFault(); err != nil {
		return RangeResult{}, err
	}
	s, err := t.snapshot(ctx)
	if err != nil {
		return RangeResult{}, err
	}
	res, err := mergeRange(ctx, s, t.ws, r, opts)
	if err != nil {
		return RangeResult{}, err
	}
	if !snapshot && !t.readOnly {
		t.addReadRange(readSpan(r, res, opts))
	}
	return res, nil
}

// readSpan is the part of r that a range read actually depended on: all of it,
// or, when the limit cut the read short, up to and including the last key
// returned (FoundationDB's rule, so that inserts past a page do not conflict).
func readSpan(r KeyRange, res RangeResult, opts RangeOptions) KeyRange {
	if !res.More || len(res.KVs) == 0 {
		return KeyRange{Begin: bytes.Clone(r.Begin), End: bytes.Clone(r.End)}
	}
	last := res.KVs[len(res.KVs)-1].Key
	if opts.Reverse {
		return KeyRange{Begin: bytes.Clone(last), End: bytes.Clone(r.End)}
	}
	return KeyRange{Begin: bytes.Clone(r.Begin), End: KeyAfter(last)}
}

func (t *txn) addReadKey(key []byte) {
	t.readKeys = append(t.readKeys, key)
	t.grow(len(key))
}

func (t *txn) addReadRange(r KeyRange) {
	t.readRanges = append(t.readRanges, r)
	t.grow(len(r.Begin) + len(r.End))
}

func (t *txn) grow(n int) {
	t.size += n
	if t.size > t.db.opts.MaxTxnBytes {
		t.fail(Errorf(CodeTxnTooLarge, "over %d bytes of writes and conflict ranges", t.db.opts.MaxTxnBytes))
	}
}

// writable checks a write's arguments; false means the error stuck.
func (t *txn) writable(key []byte, valueLen int) bool {
	if t.readOnly {
		t.fail(ErrReadOnly)
		return false
	}
	if t.usable() != nil {
		return false
	}
	if len(key) > t.db.opts.MaxKeyBytes {
		t.fail(Errorf(CodeKeyTooLarge, "%d bytes, the bound is %d", len(key), t.db.opts.MaxKeyBytes))
		return false
	}
	if valueLen > t.db.opts.MaxValueBytes {
		t.fail(Errorf(CodeValueTooLarge, "%d bytes, the bound is %d", valueLen, t.db.opts.MaxValueBytes))
		return false
	}
	t.grow(len(key) + valueLen)
	return t.err == nil
}

func (t *txn) AddReadConflict(key []byte) {
	if t.writable(key, 0) {
		t.addReadKey(bytes.Clone(key))
	}
}

func (t *txn) AddReadConflictRange(begin, end []byte) {
	if t.writable(begin, len(end)) {
		t.addReadRange(KeyRange{Begin: bytes.Clone(begin), End: bytes.Clone(end)})
	}
}

func (t *txn) Set(key, value []byte) {
	if t.writable(key, len(value)) {
		t.ws.set(bytes.Clone(key), bytes.Clone(value))
	}
}

func (t *txn) Clear(key []byte) {
	if t.writable(key, 0) {
		t.ws.clear(bytes.Clone(key))
	}
}

func (t *txn) ClearRange(begin, end []byte) {
	if !t.writable(begin, len(end)) {
		return
	}
	r := KeyRange{Begin: bytes.Clone(begin), End: bytes.Clone(end)}
	if !r.Empty() {
		t.ws.clearRange(r)
	}
}

func (t *txn) SetVersionstampedKey(key []byte, offset int, value []byte) {
	t.stamped(StampedOp{Key: bytes.Clone(key), Value: bytes.Clone(value), InKey: true, Offset: offset}, len(key))
}

func (t *txn) SetVersionstampedValue(key, value []byte, offset int) {
	t.stamped(StampedOp{Key: bytes.Clone(key), Value: bytes.Clone(value), Offset: offset}, len(value))
}

func (t *txn) stamped(op StampedOp, n int) {
	if !t.writable(op.Key, len(op.Value)) {
		return
	}
	if op.Offset < 0 || op.Offset+StampLen > n {
		t.fail(Errorf(CodeInvalid, "versionstamp offset %d does not leave %d bytes in %d", op.Offset, StampLen, n))
		return
	}
	t.ws.stamped = append(t.ws.stamped, op)
}

func (t *txn) Commit(ctx context.Context) (err error) {
	if t.readOnly {
		t.Cancel()
		return ErrReadOnly
	}
	if err := t.usable(); err != nil {
		t.Cancel()
		return err
	}
	defer t.Cancel()
	t.version = -1
	if t.ws.empty() {
		return nil // nothing to write: a read-only commit is a no-op, as in FoundationDB
	}
	if len(t.readKeys) > 0 || len(t.readRanges) > 0 {
		// Conflicts named without any read still need a read version.
		if _, err := t.snapshot(ctx); err != nil {
			return err
		}
	}
	req := &CommitRequest{ReadKeys: t.readKeys, ReadRanges: t.readRanges, Relaxed: durability.IsRelaxed(ctx), InProcess: durability.IsInProcess(ctx)}
	if t.snap != nil {
		req.Snapshot, req.ReadVersion = t.snap, t.snap.Version()
	}
	t.ws.fill(req)
	if h := t.db.hooks; h != nil && h.Commit != nil {
		start := time.Now()
		defer func() { h.Commit(time.Since(start), err) }()
	}
	fault := t.db.faults.commitFault()
	switch fault {
	case faultConflict:
		return Errorf(CodeConflict, "injected")
	case faultTooOld:
		return Errorf(CodeTooOld, "injected")
	case faultMaybeNotCommitted:
		return Errorf(CodeMaybeCommitted, "injected, not committed")
	}
	v, err := t.db.be.Commit(ctx, req)
	if err != nil {
		return err
	}
	t.version, t.stamp = v, req.Stamp
	if fault == faultMaybeCommitted {
		return Errorf(CodeMaybeCommitted, "injected after a real commit at version %d", v)
	}
	return nil
}

func (t *txn) CommittedVersion() int64 { return t.version }

func (t *txn) Versionstamp() []byte { return t.stamp }

func (t *txn) Cancel() {
	if t.done {
		return
	}
	t.done = true
	if t.snap != nil {
		t.snap.Release()
	}
}

var _ Txn = (*txn)(nil)

// String helps debugging.
func (t *txn) String() string {
	return fmt.Sprintf("txn{reads:%d ranges:%d writes:%d}", len(t.readKeys), len(t.readRanges), t.ws.muts.Len())
}
