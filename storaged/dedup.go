package storaged

import (
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/storaged/engine"
)

// dedup remembers, per (client, chain, channel), the newest update and its
// outcome, so that a client's retry of an update never takes effect twice:
// applied again after another client's write, it would undo that write (a
// reader would see the first value, the second, then the first again).
//
//   - A success is remembered with its answer: the retry gets that answer.
//   - A failure that may have taken effect (the head applied the update, or
//     sent a removal down the chain, before it failed) is remembered with the
//     chunk's state at this head just after it (a chunkMark). If the chunk
//     changed since, a later update ran over the attempt's effect: the retry
//     is answered as done, once the chunk is committed. If it did not, the
//     retry runs again, which over the same state is harmless.
//   - A failure that took no effect is forgotten: the retry runs as new.
type dedup struct {
	mu      sync.Mutex
	entries map[dedupKey]*dedupEntry
	ttl     time.Duration
}

type dedupKey struct {
	client  uint64
	chain   uint32
	channel uint32
}

type dedupEntry struct {
	seq  uint64
	done bool
	resp *storageapi.WriteResp
	// after is set while no attempt runs and the last one failed after it
	// may have taken effect.
	after *chunkMark
	at    time.Time
}

// chunkMark is a chunk's state at the head: any update run on it changes
// its versions, or, removed and written again, at least one of them or its
// length and checksum (else its content is the same, and re-running an update
// over it is harmless).
type chunkMark struct {
	exists bool
	meta   engine.Meta
}

func newDedup(ttl time.Duration) *dedup {
	return &dedup{entries: map[dedupKey]*dedupEntry{}, ttl: ttl}
}

// begin claims the tag. It returns a cached answer for a completed retry, an
// error for an old or concurrent one, and otherwise the mark an earlier
// attempt left (nil for none); the caller runs the update and calls finish.
func (d *dedup) begin(tag storageapi.Tag, chain uint32) (*storageapi.WriteResp, *chunkMark, error) {
	k := dedupKey{tag.Client, chain, tag.Channel}
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	var prior *chunkMark
	if e := d.entries[k]; e != nil {
		switch {
		case tag.Seq < e.seq:
			return nil, nil, rpc.Errorf(storageapi.CodeDuplicate, "sequence %d on channel %d is older than %d", tag.Seq, tag.Channel, e.seq)
		case tag.Seq == e.seq && e.done:
			return e.resp, nil, nil
		case tag.Seq == e.seq && e.after == nil:
			return nil, nil, rpc.Errorf(storageapi.CodeChannelBusy, "sequence %d on channel %d is still running", tag.Seq, tag.Channel)
		case tag.Seq == e.seq:
			prior = e.after
		}
	}
	if len(d.entries) > 100_000 {
		d.expire(now)
	}
	d.entries[k] = &dedupEntry{seq: tag.Seq, at: now}
	return nil, prior, nil
}

// finish records the outcome of the update begun with tag; after is the
// chunk's mark when the update failed and may have taken effect.
func (d *dedup) finish(tag storageapi.Tag, chain uint32, resp *storageapi.WriteResp, after *chunkMark, err error) {
	k := dedupKey{tag.Client, chain, tag.Channel}
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.entries[k]
	if e == nil || e.seq != tag.Seq {
		return
	}
	switch {
	case err == nil:
		e.done, e.resp, e.at = true, resp, time.Now()
	case after != nil:
		e.after, e.at = after, time.Now()
	default:
		delete(d.entries, k)
	}
}

func (d *dedup) expire(now time.Time) {
	for k, e := range d.entries {
		if (e.done || e.after != nil) && now.Sub(e.at) > d.ttl {
			delete(d.entries, k)
		}
	}
}

// remember records a success seen downstream of the head, so that this hop,
// should it become the head, answers the client's retry of the update.
func (d *dedup) remember(tag storageapi.Tag, chain uint32, resp *storageapi.WriteResp) {
	k := dedupKey{tag.Client, chain, tag.Channel}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.entries[k]; e != nil && e.seq > tag.Seq {
		return
	}
	if len(d.entries) > 100_000 {
		d.expire(time.Now())
	}
	d.entries[k] = &dedupEntry{seq: tag.Seq, done: true, resp: resp, at: time.Now()}
}
