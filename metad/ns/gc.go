package ns

import (
	"context"
	"errors"
	"fmt"
	"github.com/flyfs/flyfs/core/durability"
	"math/rand/v2"
	"time"

	"github.com/flyfs/flyfs/core/kv"
)

// gcEntry is a GC queue entry: an inode that left the namespace at RemovedAt.
type gcEntry struct {
	Ino       uint64    `cbor:"1,keyasint,omitempty"`
	Type      InodeType `cbor:"2,keyasint,omitempty"`
	RemovedAt int64     `cbor:"3,keyasint,omitempty"`
	Claimed   int64     `cbor:"4,keyasint,omitempty"` // handed to a worker at (unix ns); due again after GCClaim
	// Length is a file's length when it was queued, so the queue can say
	// how many bytes await GC (entries from before it say 0).
	Length uint64 `cbor:"5,keyasint,omitempty"`
	// Layer marks the chunks of a layer no file reads through any more
	// (layers.go), on this layout: Ino is the layer's id, not an inode.
	Layer *Layout `cbor:"6,keyasint,omitempty"`
}

// Removed is a file that GC reclaimed: its inode is gone and the caller
// deletes its chunks (all chunks of Ino on the chains of Layout; StripeHint
// bounds which chains can hold any).
type Removed struct {
	Ino        uint64 `cbor:"1,keyasint,omitempty"`
	Layout     Layout `cbor:"2,keyasint,omitempty"`
	Length     uint64 `cbor:"3,keyasint,omitempty"`
	StripeHint uint32 `cbor:"4,keyasint,omitempty"`
	RemovedAt  int64  `cbor:"5,keyasint,omitempty"`
	// Claim is the queue key that holds the file while the worker deletes
	// its chunks; GCDone clears it and deletes the inode.
	Claim []byte `cbor:"6,keyasint,omitempty"`
	// Data is the id whose chunks go (the file's DataID; a layer's id).
	// Layer: the entry is a layer's chunks, no inode.
	Data  uint64 `cbor:"7,keyasint,omitempty"`
	Layer bool   `cbor:"8,keyasint,omitempty"`
}

// DataID is the id whose chunks the caller deletes.
func (r Removed) DataID() uint64 {
	if r.Data != 0 {
		return r.Data
	}
	return r.Ino
}

// queueGC puts a removed inode (nlink 0) into the GC queue.
func (o *op) queueGC(in *Inode, at int64) {
	kind := gcFile
	if in.Type == TypeDir {
		kind = gcDir
	}
	o.tx.Set(gcKey(kind, in.ID, at), encode(&gcEntry{Ino: in.ID, Type: in.Type, RemovedAt: at, Length: in.Length}))
}

// GCBatch processes up to budget due GC queue entries and returns the files it
// reclaimed, whose chunks the caller must now delete. Directory entries (from
// RemoveAll) are due at once: each step detaches up to Options.GCExpandBatch
// children, which enter the queue with the directory's removal time (files
// that still have other links just lose one); a directory step counts as one
// entry, and the directory itself goes when it is empty. File entries are due
// Options.GCGrace after removal; a file that got a write session meanwhile (it
// was opened by inode inside a removed tree) is left for its last Close.
//
// Several metad may run GCBatch at once: entries are read with conflict
// tracking, so two workers never both reclaim one. Each transaction records
// its answer under a fresh request id, so a maybe-committed commit, retried,
// still returns the files it reclaimed. A caller that crashes after GCBatch
// returns leaks those files' chunks (storage-side orphan scans catch them).
// An empty answer does not mean an empty queue: see GCQueueLength.
func (n *Namespace) GCBatch(ctx context.Context, budget int) ([]Removed, error) {
	return n.GCBatchGrace(ctx, budget, n.opts.GCGrace)
}

// GCBatchGrace is GCBatch with files due grace after their removal instead
// of Options.GCGrace (an operator freeing space now asks for none).
func (n *Namespace) GCBatchGrace(ctx context.Context, budget int, grace time.Duration) ([]Removed, error) {
	// A claim is durable before its chunks go: it syncs every change before
	// it, the removal that queued the file among them, so no crash brings
	// back a file whose chunks are gone.
	ctx = durability.Strict(ctx)
	var out []Removed
	done := 0
	start := rand.IntN(gcShards)
	// Directories first: expanding them feeds the file queue.
	for _, kind := range []gcKind{gcDir, gcFile} {
		for s := 0; s < gcShards && done < budget; s++ {
			shard := (start + s) % gcShards
			for done < budget {
				got, count, err := n.gcStep(ctx, kind, shard, budget-done, grace)
				if err != nil {
					return out, fmt.Errorf("ns: gc: %w", err)
				}
				out = append(out, got...)
				done += count
				if count == 0 {
					break
				}
			}
		}
	}
	return out, nil
}

// gcStep processes due entries of one (kind, shard) range in one transaction:
// one directory expansion step, or up to GCExpandBatch files.
func (n *Namespace) gcStep(ctx context.Context, kind gcKind, shard, budget int, grace time.Duration) ([]Removed, int, error) {
	req := NewRequestID()
	var removed []Removed
	var count int
	err := n.update(ctx, func(o *op) error {
		removed, count = nil, 0
		rec, found, err := getIdem(o.ctx, o.tx, req, opGC)
		if err != nil {
			return err
		}
		if found { // our maybe-committed attempt did commit
			removed, count = rec.Removed, max(1, len(rec.Removed))
			return nil
		}
		cutoff := o.now
		limit := 1
		if kind == gcFile {
			cutoff -= grace.Nanoseconds()
			limit = min(budget, n.opts.GCExpandBatch)
		}
		res, err := o.tx.GetRange(o.ctx, gcRange(kind, shard), gcDue(kind, shard, cutoff), kv.RangeOptions{Limit: limit})
		if err != nil {
			return err
		}
		for _, e := range res.KVs {
			var ent gcEntry
			if err := decode(e.Value, &ent); err != nil {
				return err
			}
			var r *Removed
			if kind == gcDir {
				err = o.expandDir(e.Key, &ent)
			} else {
				r, err = o.reclaimFile(e.Key, &ent, grace)
			}
			if err != nil {
				return err
			}
			if r != nil {
				removed = append(removed, *r)
			}
			count++
		}
		if count > 0 {
			o.tx.Set(idemKey(req), encode(&idemRecord{Op: opGC, Time: o.now, Removed: removed}))
		}
		return nil
	})
	return removed, count, err
}

// expandDir detaches up to GCExpandBatch children of a removed directory and,
// once it is empty, deletes it and its queue entry. The entry range is read
// with conflict tracking (a create racing in it aborts one side; the create
// also reads the directory inode, which goes here).
func (o *op) expandDir(key []byte, ent *gcEntry) error {
	in, err := o.inode(ent.Ino)
	if errors.Is(err, ErrNotExist) {
		o.tx.Clear(key) // stale entry
		return nil
	}
	if err != nil {
		return err
	}
	p := dentryPrefix(in.ID)
	res, err := o.tx.GetRange(o.ctx, p, prefixEnd(p), kv.RangeOptions{Limit: o.n.opts.GCExpandBatch})
	if err != nil {
		return err
	}
	for _, e := range res.KVs {
		var d Dentry
		if err := decode(e.Value, &d); err != nil {
			return err
		}
		o.tx.Clear(e.Key)
		child, err := o.inode(d.Ino)
		if errors.Is(err, ErrNotExist) {
			continue // a dangling dentry (fsck reports those): just drop it
		}
		if err != nil {
			return err
		}
		if err := o.dropLink(child, ent.RemovedAt); err != nil {
			return err
		}
	}
	if !res.More {
		o.deleteInode(in)
		o.tx.Clear(key)
	}
	return nil
}

// reclaimFile claims a removed file for the calling worker and returns what
// it needs to delete the chunks. The inode stays (nlink 0) and the queue
// entry moves to become due again GCClaim from now, so a worker that crashes
// before GCDone only delays reclaiming: another worker takes the file then
// (deleting chunks twice is harmless).
func (o *op) reclaimFile(key []byte, ent *gcEntry, grace time.Duration) (*Removed, error) {
	o.tx.Clear(key)
	if ent.Layer != nil {
		claimed := *ent
		claimed.Claimed = o.now
		claim := gcKey(gcFile, ent.Ino, o.now+o.n.opts.GCClaim.Nanoseconds()-grace.Nanoseconds())
		o.tx.Set(claim, encode(&claimed))
		return &Removed{Ino: ent.Ino, Data: ent.Ino, Layer: true, Layout: *ent.Layer, Length: ent.Length, RemovedAt: ent.RemovedAt, Claim: claim}, nil
	}
	in, err := o.inode(ent.Ino)
	if errors.Is(err, ErrNotExist) {
		return nil, nil // stale entry
	}
	if err != nil {
		return nil, err
	}
	if in.Nlink > 0 {
		return nil, nil // not removed (cannot happen: Link refuses nlink 0)
	}
	busy, err := o.hasSessions(in.ID)
	if err != nil || busy {
		return nil, err // its last Close queues it again
	}
	claimed := *ent
	claimed.Claimed = o.now
	// Due at now+GCClaim for whoever claims with this grace: the queue is
	// ordered by removal time and files are due grace after it. (A worker
	// with a longer grace sees it due later; one with none may take a claim
	// of a worker with a grace again: deleting chunks twice is harmless.)
	at := o.now + o.n.opts.GCClaim.Nanoseconds() - grace.Nanoseconds()
	claim := gcKey(gcFile, in.ID, at)
	o.tx.Set(claim, encode(&claimed))
	return &Removed{Ino: in.ID, Data: in.DataID(), Layout: in.Layout, Length: in.Length, StripeHint: in.StripeHint, RemovedAt: ent.RemovedAt, Claim: claim}, nil
}

// GCDone finishes reclaiming files whose chunks the caller deleted: each
// claim's queue entry goes and so does the inode. A claim that expired and
// was taken by another worker is left to that worker; a file that got a
// write session meanwhile (opened by inode) stays for its last Close.
func (n *Namespace) GCDone(ctx context.Context, done []Removed) error {
	for len(done) > 0 {
		batch := done[:min(len(done), 64)]
		done = done[len(batch):]
		err := n.update(ctx, func(o *op) error {
			for _, r := range batch {
				if len(r.Claim) == 0 {
					continue
				}
				v, found, err := o.tx.Get(o.ctx, r.Claim)
				if err != nil {
					return err
				}
				if !found {
					continue // finished by another worker after our claim expired
				}
				var ent gcEntry
				if err := decode(v, &ent); err != nil {
					return err
				}
				o.tx.Clear(r.Claim)
				if r.Layer {
					continue // a layer's chunks: no inode
				}
				in, err := o.inode(r.Ino)
				if errors.Is(err, ErrNotExist) {
					continue
				}
				if err != nil {
					return err
				}
				busy, err := o.hasSessions(in.ID)
				if err != nil {
					return err
				}
				if in.Nlink == 0 && in.Versions == 0 && !busy {
					if err := o.unrefLayers(in.Layers); err != nil {
						return err
					}
					o.deleteInode(in)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("ns: gc done: %w", err)
		}
	}
	return nil
}

// GCGrace is how long removed files keep their chunks (Options.GCGrace).
func (n *Namespace) GCGrace() time.Duration { return n.opts.GCGrace }

// GCQueueSummary is what the GC queue holds: every entry, and those past
// their grace period (Options.GCGrace), which the next collection takes.
type GCQueueSummary struct {
	Entries, Due    int
	Bytes, DueBytes uint64
}

// GCQueue sums up the GC queue.
func (n *Namespace) GCQueue(ctx context.Context) (GCQueueSummary, error) {
	var q GCQueueSummary
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		q = GCQueueSummary{}
		dueBefore := time.Now().Add(-n.opts.GCGrace).UnixNano()
		return scan(ctx, tx, tagGC, prefixEnd(tagGC), func(_, v []byte) error {
			q.Entries++
			var e gcEntry
			if decode(v, &e) != nil {
				return nil
			}
			q.Bytes += e.Length
			if n.opts.GCGrace <= 0 || e.RemovedAt <= dueBefore {
				q.Due++
				q.DueBytes += e.Length
			}
			return nil
		})
	})
	return q, err
}

// GCQueueLength returns how many entries the GC queue holds (due or not).
func (n *Namespace) GCQueueLength(ctx context.Context) (int, error) {
	count := 0
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		count = 0
		return scan(ctx, tx, tagGC, prefixEnd(tagGC), func(_, _ []byte) error {
			count++
			return nil
		})
	})
	return count, err
}
