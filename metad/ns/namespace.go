package ns

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/layout"
)

// Options configure a Namespace. Zero values take the defaults.
type Options struct {
	// GCGrace delays reclaiming a removed file's chunks, so readers that have it
	// open keep reading. 0 means 5 minutes; negative means no delay.
	GCGrace time.Duration
	// IdemTTL is how long idempotency records are kept; 0 means 1 hour.
	IdemTTL time.Duration
	// GCExpandBatch is how many children of a removed directory one GC
	// transaction detaches; 0 means 128.
	GCExpandBatch int
	// GCClaim is how long a GC worker owns the files GCBatch handed it: if
	// it has not called GCDone by then (it crashed), the files become due
	// again for any worker. Default 2 minutes.
	GCClaim time.Duration
	// ReadDirLimit is the page size of ReadDir with limit <= 0; 0 means 128.
	ReadDirLimit int
	// RootMode is the root directory's permission bits when New creates it;
	// 0 means 0755.
	RootMode uint32
	// RootLayout is the root directory's default layout when New creates it.
	RootLayout Layout
	// NewFileLayout, if set, completes a new file's layout (e.g. picks its chain
	// range round-robin and a shuffle seed) from the layout it would otherwise get.
	NewFileLayout func(inherited Layout, ino uint64) Layout
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// TrashDays keeps removed files and trees in the trash that long
	// (trash.go); 0: no trash.
	TrashDays int
	// InlineMax is the largest file whose data a close may keep in its
	// inode (inline.go); 0: none. Only a metad that can write chunks (to
	// move the data out when the file is opened for writing again) sets it.
	InlineMax int
}

func (o Options) withDefaults() Options {
	if o.GCGrace == 0 {
		o.GCGrace = 5 * time.Minute
	}
	if o.GCGrace < 0 {
		o.GCGrace = 0
	}
	if o.IdemTTL <= 0 {
		o.IdemTTL = time.Hour
	}
	if o.GCClaim <= 0 {
		o.GCClaim = 2 * time.Minute
	}
	if o.GCExpandBatch <= 0 {
		o.GCExpandBatch = 128
	}
	if o.ReadDirLimit <= 0 {
		o.ReadDirLimit = 128
	}
	if o.RootMode == 0 {
		o.RootMode = 0o755
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Namespace is the file-system namespace over a KV store. Any number of
// Namespaces (one per metad) may share one store: everything they share lives
// in the store and every operation is one serializable transaction.
type Namespace struct {
	db    *kv.DB
	opts  Options
	alloc *allocator

	// counters for tests and metrics
	ops      atomic.Int64 // mutating transactions run
	attempts atomic.Int64 // bodies run (ops + retries)
	deltas   atomic.Int64 // StatFS deltas written since the last fold
}

// Sync makes every change acknowledged before it durable; changes made
// under durability.Relaxed are acknowledged before they are.
func (n *Namespace) Sync(ctx context.Context) error {
	if err := n.db.Sync(ctx); err != nil {
		return fmt.Errorf("ns: sync: %w", err)
	}
	return nil
}

// New returns a Namespace over db, creating the root directory if it does not
// exist yet (idempotently: any number of metad may start at once).
func New(db *kv.DB, opts Options) (*Namespace, error) {
	n := &Namespace{db: db, opts: opts.withDefaults()}
	n.alloc = newAllocator(db)
	err := n.update(context.Background(), func(o *op) error {
		_, found, err := o.tx.Get(o.ctx, inodeKey(RootID))
		if err != nil || found {
			return err
		}
		o.createInode(&Inode{ID: RootID, Type: TypeDir, Mode: n.opts.RootMode & 07777, Nlink: 1, CountsSubdirs: true,
			Atime: o.now, Mtime: o.now, Ctime: o.now, Parent: RootID, DefaultLayout: ptr(n.opts.RootLayout)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ns: create root: %w", err)
	}
	return n, nil
}

func ptr[T any](v T) *T { return &v }

// DB returns the store under the namespace.
func (n *Namespace) DB() *kv.DB { return n.db }

func (n *Namespace) now() int64 { return n.opts.Now().UnixNano() }

// op is one attempt of a mutating transaction: the transaction, the attempt's
// clock reading, and what the attempt changes besides its own keys (StatFS
// deltas, directories whose mtime moves), written by finish.
type op struct {
	n   *Namespace
	ctx context.Context
	tx  kv.Txn
	now int64

	dInodes, dBytes int64
	dirs            map[uint64]struct{}
	// bypass lets this op remove files under governance retention
	// (objectlock.go).
	bypass bool
	// released are layers files of this op no longer read through (a
	// truncate cut them away): their references go at its end.
	released []layout.Layer
	// snapshotting: this op builds or deletes a snapshot, the one change
	// allowed of read-only inodes.
	snapshotting bool
	// subdirs: a directory's count of subdirectories changed (addSubdir).
	subdirs bool
	// unversioned: this op read that no bucket has a versioning state
	// (versioned), and has set none since.
	unversioned bool
}

// touch records that dir's entries changed (its mtime moves).
func (o *op) touch(dir uint64) {
	if o.dirs == nil {
		o.dirs = map[uint64]struct{}{}
	}
	o.dirs[dir] = struct{}{}
}

// finish writes the attempt's side effects. All are blind writes: they add no
// conflicts, so creates in one directory do not serialise on them.
func (o *op) finish() {
	for d := range o.dirs {
		o.tx.Set(dirTimeKey(d), encode(o.now))
	}
	if o.dInodes != 0 || o.dBytes != 0 {
		o.n.writeDelta(o.tx, o.now, statDelta{Inodes: o.dInodes, Bytes: o.dBytes})
	}
}

// update runs fn as one read-write transaction, retried on conflicts and
// maybe-committed commits; fn must be idempotent (see idem.go). While a
// snapshot freezes the namespace (freeze.go) it waits.
func (n *Namespace) update(ctx context.Context, fn func(o *op) error) error {
	return n.runUpdate(ctx, false, fn)
}

// runUpdate is update; thawed runs fn even while the namespace is frozen
// (the freezing snapshot's own transactions).
func (n *Namespace) runUpdate(ctx context.Context, thawed bool, fn func(o *op) error) error {
	n.ops.Add(1)
	for {
		err := n.db.Run(ctx, func(tx kv.Txn) error {
			n.attempts.Add(1)
			o := &op{n: n, ctx: ctx, tx: tx, now: n.now()}
			if !thawed {
				if err := o.checkFrozen(); err != nil {
					return err
				}
			}
			if err := fn(o); err != nil {
				return err
			}
			if err := o.unrefLayers(o.released); err != nil {
				return err
			}
			o.finish()
			return nil
		})
		if errors.Is(err, errFrozen) {
			if err := waitThaw(ctx); err != nil {
				return err
			}
			continue
		}
		if err == nil && n.deltas.Load() >= foldEvery {
			n.deltas.Store(0)
			_ = n.foldStats(ctx) // best effort: StatFS is exact without folding, only slower
		}
		return err
	}
}

// view runs fn in a read-only transaction.
func (n *Namespace) view(ctx context.Context, fn func(tx kv.ReadTxn) error) error {
	return n.db.RunRead(ctx, fn)
}

// Retries returns how many transaction bodies were re-run (conflicts, faults)
// over how many mutating transactions, since New.
func (n *Namespace) Retries() (retries, ops int64) {
	o := n.ops.Load()
	return n.attempts.Load() - o, o
}

// isErrno reports whether err is a namespace result (not a KV failure).
func isErrno(err error) bool {
	var e Errno
	return errors.As(err, &e)
}
