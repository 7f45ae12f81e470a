package ns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/flyfs/flyfs/core/kv"
)

// RequestID identifies one mutating request. The caller generates it once
// (NewRequestID) and reuses it on every retry of that request; that is what
// makes retries after a timeout, a lost reply or a metad failover safe. A zero
// RequestID gets a fresh one per call, which still covers the KV retry loop
// (maybe-committed commits) but not the caller's own retries.
type RequestID [16]byte

// NewRequestID returns a random request id.
func NewRequestID() RequestID {
	var r RequestID
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails
	return r
}

// IsZero reports whether r is unset.
func (r RequestID) IsZero() bool { return r == RequestID{} }

func (r RequestID) String() string { return hex.EncodeToString(r[:]) }

func (r RequestID) orNew() RequestID {
	if r.IsZero() {
		return NewRequestID()
	}
	return r
}

// opKind tags an idempotency record with the operation that wrote it, so a
// request id reused for a different operation is refused instead of answered.
type opKind uint8

const (
	opUnlink opKind = iota + 1
	opRmdir
	opRename
	opRemoveAll
	opRemoveXattr
	opGC
	opDeleteKey
	opDeleteVersion
	opRestoreTrash
	opDeleteSnapshot
	opShareInto
)

// idemRecord is the stored outcome of a remove-type request. Errors are
// recorded too: an unlink that failed with ENOENT must not, when retried after
// someone created the name, delete the new file.
type idemRecord struct {
	Op      opKind    `cbor:"1,keyasint,omitempty"`
	Time    int64     `cbor:"2,keyasint,omitempty"` // unix ns, for expiry
	Errno   int32     `cbor:"3,keyasint,omitempty"` // 0: success
	Removed []Removed `cbor:"4,keyasint,omitempty"` // GCBatch's answer
	// DeleteKey's and DeleteVersion's answers (Version: the marker's id;
	// for RestoreTrash, where the entry went).
	Version      string `cbor:"5,keyasint,omitempty"`
	DeleteMarker bool   `cbor:"6,keyasint,omitempty"`
	Promoted     string `cbor:"7,keyasint,omitempty"`
	// Unlink's and Rename's answers (Change).
	Subdirs bool  `cbor:"8,keyasint,omitempty"`
	DirTime int64 `cbor:"9,keyasint,omitempty"`
}

func (r *idemRecord) result(req RequestID) error {
	if r.Errno == 0 {
		return nil
	}
	return fmt.Errorf("ns: request %s (replayed): %w", req, Errno(r.Errno))
}

// getIdem looks up req's record. A snapshot read is enough: only this request
// writes the key, and a retry reads at a version after any commit of it.
func getIdem(ctx context.Context, tx kv.ReadTxn, req RequestID, op opKind) (*idemRecord, bool, error) {
	v, found, err := tx.SnapshotGet(ctx, idemKey(req))
	if err != nil || !found {
		return nil, false, err
	}
	rec := new(idemRecord)
	if err := decode(v, rec); err != nil {
		return nil, false, err
	}
	if rec.Op != op {
		return nil, false, fail(ErrInvalid, "request %s was used for another operation", req)
	}
	return rec, true, nil
}

// errRecord aborts an attempt whose outcome is an error, to be recorded by a
// transaction of its own (the attempt may have buffered writes).
type errRecord struct{ err error }

func (e *errRecord) Error() string { return e.err.Error() }

// updateIdem runs fn as one transaction guarded by req's idempotency record:
// a record from an earlier run (this call's maybe-committed attempt, or an
// earlier call with the same id) is returned instead of running fn; otherwise
// fn's outcome is recorded with it. fn's namespace errors are recorded in a
// second transaction that writes nothing but the record (if no record appeared
// meanwhile), since the failed attempt's writes must not commit.
func (n *Namespace) updateIdem(ctx context.Context, req RequestID, kind opKind, fn func(o *op) error) error {
	_, err := n.updateIdemAnswer(ctx, req, kind, func(o *op, _ *idemRecord) error { return fn(o) })
	return err
}

// updateIdemAnswer is updateIdem for a request with an answer: fn fills it
// into the record, and the record (this run's or the replayed one) is
// returned.
func (n *Namespace) updateIdemAnswer(ctx context.Context, req RequestID, kind opKind, fn func(o *op, answer *idemRecord) error) (*idemRecord, error) {
	var replay, answer *idemRecord
	err := n.update(ctx, func(o *op) error {
		replay = nil
		answer = &idemRecord{Op: kind, Time: o.now}
		rec, found, err := getIdem(o.ctx, o.tx, req, kind)
		if err != nil {
			return err
		}
		if found {
			replay = rec
			return nil
		}
		if err := fn(o, answer); err != nil {
			if isErrno(err) {
				return &errRecord{err}
			}
			return err
		}
		o.tx.Set(idemKey(req), encode(answer))
		return nil
	})
	var er *errRecord
	if errors.As(err, &er) {
		e, _ := AsErrno(er.err)
		err = n.update(ctx, func(o *op) error {
			replay = nil
			rec, found, err := getIdem(o.ctx, o.tx, req, kind)
			if err != nil {
				return err
			}
			if found {
				replay = rec
				return nil
			}
			o.tx.Set(idemKey(req), encode(&idemRecord{Op: kind, Time: o.now, Errno: int32(e)}))
			return nil
		})
		if err == nil && replay == nil {
			return nil, er.err
		}
	}
	if err != nil {
		return nil, err
	}
	if replay != nil {
		return replay, replay.result(req)
	}
	return answer, nil
}

// CleanIdem drops idempotency records older than Options.IdemTTL and returns
// how many it dropped. Run it periodically on one metad (any will do: clears
// are blind and records are write-once).
func (n *Namespace) CleanIdem(ctx context.Context) (int, error) {
	cutoff := n.now() - n.opts.IdemTTL.Nanoseconds()
	begin, end := tagIdem, prefixEnd(tagIdem)
	dropped := 0
	for {
		var old [][]byte
		var next []byte
		more := false
		err := n.view(ctx, func(tx kv.ReadTxn) error {
			old, next, more = nil, nil, false
			res, err := tx.SnapshotGetRange(ctx, begin, end, kv.RangeOptions{Limit: 512})
			if err != nil {
				return err
			}
			for _, e := range res.KVs {
				var rec idemRecord
				if decode(e.Value, &rec) != nil || rec.Time < cutoff {
					old = append(old, e.Key)
				}
			}
			if res.More {
				more, next = true, kv.KeyAfter(res.KVs[len(res.KVs)-1].Key)
			}
			return nil
		})
		if err != nil {
			return dropped, fmt.Errorf("ns: clean idempotency records: %w", err)
		}
		if len(old) > 0 {
			err = n.db.Run(ctx, func(tx kv.Txn) error {
				for _, k := range old {
					tx.Clear(k)
				}
				return nil
			})
			if err != nil {
				return dropped, fmt.Errorf("ns: clean idempotency records: %w", err)
			}
			dropped += len(old)
		}
		if !more {
			return dropped, nil
		}
		begin = next
	}
}
