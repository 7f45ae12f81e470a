package storaged

import (
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/rpc"
)

// dedup remembers, per (client, chain, channel), the newest update and its
// result, so a client that retries after a lost reply gets the first result
// instead of applying a partial overwrite twice (which could undo a write
// another client made in between). Only successes are remembered: an update
// that failed was never acknowledged, so running it again is allowed.
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
	at   time.Time
}

func newDedup(ttl time.Duration) *dedup {
	return &dedup{entries: map[dedupKey]*dedupEntry{}, ttl: ttl}
}

// begin claims the tag. It returns a cached response for a completed retry, or
// an error for an old or concurrent one; otherwise the caller runs the update
// and calls finish.
func (d *dedup) begin(tag storageapi.Tag, chain uint32) (*storageapi.WriteResp, error) {
	k := dedupKey{tag.Client, chain, tag.Channel}
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.entries[k]; e != nil {
		switch {
		case tag.Seq < e.seq:
			return nil, rpc.Errorf(storageapi.CodeDuplicate, "sequence %d on channel %d is older than %d", tag.Seq, tag.Channel, e.seq)
		case tag.Seq == e.seq && e.done:
			return e.resp, nil
		case tag.Seq == e.seq:
			return nil, rpc.Errorf(storageapi.CodeChannelBusy, "sequence %d on channel %d is still running", tag.Seq, tag.Channel)
		}
	}
	if len(d.entries) > 100_000 {
		d.expire(now)
	}
	d.entries[k] = &dedupEntry{seq: tag.Seq, at: now}
	return nil, nil
}

// finish records the outcome of the update begun with tag.
func (d *dedup) finish(tag storageapi.Tag, chain uint32, resp *storageapi.WriteResp, err error) {
	k := dedupKey{tag.Client, chain, tag.Channel}
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.entries[k]
	if e == nil || e.seq != tag.Seq {
		return
	}
	if err != nil {
		delete(d.entries, k)
		return
	}
	e.done, e.resp, e.at = true, resp, time.Now()
}

func (d *dedup) expire(now time.Time) {
	for k, e := range d.entries {
		if e.done && now.Sub(e.at) > d.ttl {
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
