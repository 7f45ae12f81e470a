package kv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Options bound transactions and configure the retry loop. Zero values take
// the defaults, which follow FoundationDB's limits.
type Options struct {
	MaxTxnBytes    int           // writes plus conflict ranges; default 10 MB
	MaxKeyBytes    int           // default 10 KB
	MaxValueBytes  int           // default 100 KB
	MaxTxnDuration time.Duration // from the first operation to commit; default 5 s
	MaxAttempts    int           // Run gives up after this many attempts; default 100
	MaxBackoff     time.Duration // longest sleep between attempts; default 1 s
	Faults         *Faults       // fault injection for tests; nil in production
	// Hooks, when set, observe the store's transactions (metrics; see
	// Hooks and DB.WithHooks).
	Hooks *Hooks
}

// Hooks observe what the store's transactions do, for metrics. A nil field
// is skipped. They run on the caller's goroutine and must be cheap.
type Hooks struct {
	// Txn is called once per Run or RunRead when it returns: read-only or
	// not, the attempts it took, how long it ran in all, and its final error
	// (nil: committed, or read).
	Txn func(readOnly bool, attempts int, d time.Duration, err error)
	// Retry is called for each attempt of a Run or RunRead that failed with
	// a retryable error and is about to run again (not for the last one).
	Retry func(readOnly bool, err error)
	// Commit is called for each commit that reached the engine (or its
	// fault injection), with its duration and error: a conflict is err with
	// CodeConflict. Commits of transactions that wrote nothing are not
	// counted: they do not reach the engine.
	Commit func(d time.Duration, err error)
}

func (o Options) withDefaults() Options {
	if o.MaxTxnBytes <= 0 {
		o.MaxTxnBytes = 10_000_000
	}
	if o.MaxKeyBytes <= 0 {
		o.MaxKeyBytes = 10_000
	}
	if o.MaxValueBytes <= 0 {
		o.MaxValueBytes = 100_000
	}
	if o.MaxTxnDuration <= 0 {
		o.MaxTxnDuration = 5 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 100
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Second
	}
	return o
}

// DB is a transactional KV store over one engine.
type DB struct {
	be     Backend
	opts   Options
	faults *faultState
	closed *atomic.Bool // shared by the views WithHooks makes
	hooks  *Hooks
}

// New wraps an engine's Backend.
func New(be Backend, opts Options) *DB {
	opts = opts.withDefaults()
	return &DB{be: be, opts: opts, faults: newFaultState(opts.Faults), closed: new(atomic.Bool), hooks: opts.Hooks}
}

// WithHooks returns a view of db whose transactions h observes instead of
// db's hooks: the same engine, bounds and fault injection, so two roles
// sharing one store (mgmtd and metad in one process) each count their own
// transactions. Closing either closes both.
func (db *DB) WithHooks(h *Hooks) *DB {
	v := *db
	v.hooks = h
	v.opts.Hooks = h
	return &v
}

// Options returns the options in force.
func (db *DB) Options() Options { return db.opts }

// Backend returns the engine under the DB.
func (db *DB) Backend() Backend { return db.be }

// Begin starts a read-write transaction. The caller must Commit or Cancel it.
func (db *DB) Begin() Txn { return db.begin(false) }

// BeginRead starts a read-only transaction. The caller must Cancel it.
func (db *DB) BeginRead() ReadTxn { return db.begin(true) }

func (db *DB) begin(readOnly bool) *txn {
	return &txn{db: db, readOnly: readOnly, ws: newWriteSet(), start: time.Now()}
}

// Run runs fn in a read-write transaction and commits it, re-running fn on
// retryable errors (conflicts, too-old, maybe-committed, transient faults) with
// jittered exponential backoff. fn may run several times and, after a
// maybe-committed error, after its writes were applied: it must be idempotent.
// Run gives up after Options.MaxAttempts with an error wrapping ErrTooManyTries
// and the last failure.
func (db *DB) Run(ctx context.Context, fn func(Txn) error) error {
	return db.retry(ctx, false, func() error {
		t := db.begin(false)
		if err := fn(t); err != nil {
			t.Cancel()
			return err
		}
		return t.Commit(ctx)
	})
}

// RunRead runs fn in a read-only transaction, re-running it on retryable errors.
func (db *DB) RunRead(ctx context.Context, fn func(ReadTxn) error) error {
	return db.retry(ctx, true, func() error {
		t := db.begin(true)
		defer t.Cancel()
		return fn(t)
	})
}

func (db *DB) retry(ctx context.Context, readOnly bool, attempt func() error) error {
	h := db.hooks
	if h == nil || h.Txn == nil && h.Retry == nil {
		_, err := db.retryLoop(ctx, readOnly, nil, attempt)
		return err
	}
	start := time.Now()
	n, err := db.retryLoop(ctx, readOnly, h.Retry, attempt)
	if h.Txn != nil {
		h.Txn(readOnly, n, time.Since(start), err)
	}
	return err
}

// retryLoop runs attempt until it succeeds or fails for good, and returns
// the attempts made; retried is told of each retryable failure run again.
func (db *DB) retryLoop(ctx context.Context, readOnly bool, retried func(bool, error), attempt func() error) (int, error) {
	backoff := time.Millisecond
	for n := 1; ; n++ {
		if db.closed.Load() {
			return n, ErrClosed
		}
		err := attempt()
		if err == nil || !IsRetryable(err) {
			return n, err
		}
		if ctx.Err() != nil {
			return n, fmt.Errorf("kv: %w (last attempt: %w)", ctx.Err(), err)
		}
		if n >= db.opts.MaxAttempts {
			return n, &Error{Code: CodeTooManyTries, Detail: fmt.Sprintf("%d attempts", n), Err: err}
		}
		if retried != nil {
			retried(readOnly, err)
		}
		sleep := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-ctx.Done():
			return n, fmt.Errorf("kv: %w (last attempt: %w)", ctx.Err(), err)
		case <-time.After(sleep):
		}
		backoff = min(backoff*2, db.opts.MaxBackoff)
	}
}

// Close closes the engine. Transactions still running fail.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return nil
	}
	return db.be.Close()
}
