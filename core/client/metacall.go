package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/rpc"
)

// callMeta runs op against each metad in turn while they are unavailable,
// sweeping again with growing pauses for up to MetaRetry (or until ctx ends).
// Mutations carry one request id across all attempts, so a retry of a call
// that did land gets the first attempt's result.
func callMeta[T any](ctx context.Context, fs *FS, op func(m metaapi.Client) (T, error)) (T, error) {
	var zero T
	var last error
	start := time.Now()
	pause := 20 * time.Millisecond
	for {
		list := *fs.meta.Load()
		for _, m := range list {
			v, err := op(m)
			if err == nil || !metaUnavailable(err) {
				return v, err
			}
			last = err
			if ctx.Err() != nil {
				return zero, err
			}
		}
		if len(list) == 0 {
			last = errors.New("client: no metad known")
		}
		if time.Since(start)+pause > fs.MetaRetry {
			return zero, fmt.Errorf("%w (no metad answered for %v)", last, fs.MetaRetry)
		}
		select {
		case <-ctx.Done():
			return zero, fmt.Errorf("%w (last error: %w)", ctx.Err(), last)
		case <-time.After(pause):
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// metaUnavailable: the call did not reach a working metad (another may
// answer, or this one after a restart).
func metaUnavailable(err error) bool {
	switch rpc.CodeOf(err) {
	case rpc.Unavailable, rpc.Aborted:
		return true
	}
	return false
}

// callMetaFor is callMeta with the metad list ordered by rendezvous hashing
// on ino: every client sends one inode's closes and length reports to the
// same live metad, which settles that file's length without racing another.
func callMetaFor[T any](ctx context.Context, fs *FS, ino uint64, op func(m metaapi.Client) (T, error)) (T, error) {
	list := *fs.meta.Load()
	if len(list) < 2 {
		return callMeta(ctx, fs, op)
	}
	best, bestScore := 0, uint64(0)
	for i, m := range list {
		if s := rendezvous(m.Addr, ino); i == 0 || s > bestScore {
			best, bestScore = i, s
		}
	}
	first := list[best]
	v, err := op(first)
	if err == nil || !metaUnavailable(err) {
		return v, err
	}
	return callMeta(ctx, fs, op) // the chosen metad is down: any other will do
}

// rendezvous scores (addr, ino): FNV-1a of the address mixed with the inode.
func rendezvous(addr string, ino uint64) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(addr); i++ {
		h ^= uint64(addr[i])
		h *= 1099511628211
	}
	h ^= ino
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func newReqID() metaapi.RequestID {
	var r metaapi.RequestID
	rand.Read(r[:])
	return r
}
