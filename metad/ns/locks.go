package ns

import (
	"context"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/kv"
)

// File locks that every mount sees: a file's fcntl locks and its flock
// locks are two tables (LOCK ino class; Linux keeps the two kinds apart),
// changed in transactions (locktable.go decides). A lock belongs to its
// client's lock session (LKSS client -> expiry), which the client renews
// while it runs: a lock whose session has expired (its mount died, or
// lost the cluster for longer than the session's time to live) is no
// longer held, and the next change of its table drops it.

// LockClass tells fcntl locks from flock locks.
type LockClass byte

const (
	LockPOSIX LockClass = 'p' // fcntl(2) record locks
	LockFlock LockClass = 'f' // flock(2)
)

var (
	// ErrAgain: another holder has a conflicting lock.
	ErrAgain = Errno(syscall.EAGAIN)
	// ErrNoLock: the client's lock session is not live (renew it first).
	ErrNoLock = Errno(syscall.ENOLCK)
)

var (
	tagLock        = kv.Tag("LOCK")
	tagLockSession = kv.Tag("LKSS")
)

func lockKey(ino uint64, class LockClass) []byte {
	return append(putID(withTag(tagLock, 9), ino), byte(class))
}

func lockSessionKey(client string) []byte {
	return append(withTag(tagLockSession, len(client)), client...)
}

type lockSession struct {
	Expires int64 `cbor:"1,keyasint"` // unix nanoseconds
}

// maxLockClient bounds a lock session's name.
const maxLockClient = 64

func checkLock(client string, class LockClass, l *RangeLock) error {
	switch {
	case client == "" || len(client) > maxLockClient:
		return fail(ErrInvalid, "lock session name of %d bytes", len(client))
	case class != LockPOSIX && class != LockFlock:
		return fail(ErrInvalid, "lock class %q", class)
	case l != nil && l.Holder.Client != client:
		return fail(ErrInvalid, "a lock held for session %q asked by %q", l.Holder.Client, client)
	case l != nil && l.Kind != LockRead && l.Kind != LockWrite:
		return fail(ErrInvalid, "lock kind %d", l.Kind)
	case l != nil && l.Start > l.End:
		return fail(ErrInvalid, "lock range %d..%d", l.Start, l.End)
	}
	return nil
}

// RenewLockSession makes the client's lock session live for ttl from now.
func (n *Namespace) RenewLockSession(ctx context.Context, client string, ttl time.Duration) error {
	if err := checkLock(client, LockPOSIX, nil); err != nil {
		return err
	}
	if ttl <= 0 || ttl > time.Hour {
		return fail(ErrInvalid, "lock session time to live %v", ttl)
	}
	return n.update(ctx, func(o *op) error {
		o.tx.Set(lockSessionKey(client), encode(lockSession{Expires: o.now + int64(ttl)}))
		return nil
	})
}

// EndLockSession ends the client's session: every lock it holds is
// released at once.
func (n *Namespace) EndLockSession(ctx context.Context, client string) error {
	if err := checkLock(client, LockPOSIX, nil); err != nil {
		return err
	}
	return n.update(ctx, func(o *op) error {
		o.tx.Clear(lockSessionKey(client))
		return nil
	})
}

// liveLocks returns the table's locks whose sessions are live at now, and
// whether any were not.
func liveLocks(ctx context.Context, get func(context.Context, []byte) ([]byte, bool, error), held []RangeLock, now int64) ([]RangeLock, bool, error) {
	live := map[string]bool{}
	out := held[:0:0]
	dropped := false
	for _, l := range held {
		ok, seen := live[l.Holder.Client]
		if !seen {
			v, found, err := get(ctx, lockSessionKey(l.Holder.Client))
			if err != nil {
				return nil, false, err
			}
			var s lockSession
			ok = found && decode(v, &s) == nil && s.Expires > now
			live[l.Holder.Client] = ok
		}
		if ok {
			out = append(out, l)
		} else {
			dropped = true
		}
	}
	return out, dropped, nil
}

func readLockTable(ctx context.Context, get func(context.Context, []byte) ([]byte, bool, error), key []byte) ([]RangeLock, error) {
	v, found, err := get(ctx, key)
	if err != nil || !found {
		return nil, err
	}
	var held []RangeLock
	if err := decode(v, &held); err != nil {
		return nil, fail(ErrIO, "lock table %x: %v", key, err)
	}
	return held, nil
}

// GetLock returns a live lock that req conflicts with (F_GETLK), if any.
func (n *Namespace) GetLock(ctx context.Context, ino uint64, class LockClass, req RangeLock) (RangeLock, bool, error) {
	if err := checkLock(req.Holder.Client, class, &req); err != nil {
		return RangeLock{}, false, err
	}
	var got RangeLock
	var conflict bool
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		if _, err := getInode(ctx, tx, ino, true); err != nil {
			return err
		}
		held, err := readLockTable(ctx, tx.SnapshotGet, lockKey(ino, class))
		if err != nil {
			return err
		}
		live, _, err := liveLocks(ctx, tx.SnapshotGet, held, n.now())
		if err != nil {
			return err
		}
		got, conflict = lockConflict(live, req)
		return nil
	})
	return got, conflict, err
}

// SetLock sets req's range for its holder (unlock: releases it), or fails
// with ErrAgain where another live holder's lock conflicts; the holder's
// session must be live (ErrNoLock). Locks of expired sessions are dropped
// as the table is written.
func (n *Namespace) SetLock(ctx context.Context, ino uint64, class LockClass, req RangeLock, unlock bool) error {
	if unlock {
		req.Kind = LockRead // any valid kind: an unlock conflicts with nothing
	}
	if err := checkLock(req.Holder.Client, class, &req); err != nil {
		return err
	}
	return n.update(ctx, func(o *op) error {
		if _, err := o.inode(ino); err != nil {
			return err
		}
		get := o.tx.Get
		if !unlock {
			mine, _, err := liveLocks(o.ctx, get, []RangeLock{req}, o.now)
			if err != nil {
				return err
			}
			if len(mine) == 0 {
				return fail(ErrNoLock, "lock session %q is not live", req.Holder.Client)
			}
		}
		key := lockKey(ino, class)
		held, err := readLockTable(o.ctx, get, key)
		if err != nil {
			return err
		}
		live, _, err := liveLocks(o.ctx, get, held, o.now)
		if err != nil {
			return err
		}
		if !unlock {
			if _, conflict := lockConflict(live, req); conflict {
				return fail(ErrAgain, "lock of %d held by another", ino)
			}
		}
		next := lockSet(live, req, unlock)
		if len(next) == 0 {
			o.tx.Clear(key)
		} else {
			o.tx.Set(key, encode(next))
		}
		return nil
	})
}

// PurgeLockSessions removes the lock sessions that expired before before
// (their locks are no longer held: a lock whose session is gone is as dead
// as one whose session expired) and returns how many it removed.
func (n *Namespace) PurgeLockSessions(ctx context.Context, before time.Time) (int, error) {
	var dead [][]byte
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		dead = nil
		return scan(ctx, tx, tagLockSession, prefixEnd(tagLockSession), func(k, v []byte) error {
			var s lockSession
			if decode(v, &s) == nil && s.Expires < before.UnixNano() {
				dead = append(dead, append([]byte(nil), k...))
			}
			return nil
		})
	})
	if err != nil || len(dead) == 0 {
		return 0, err
	}
	removed := 0
	err = n.update(ctx, func(o *op) error {
		removed = 0
		for _, k := range dead {
			// Read again in the transaction: a renewal since the scan keeps it.
			v, found, err := o.tx.Get(o.ctx, k)
			if err != nil {
				return err
			}
			var s lockSession
			if found && decode(v, &s) == nil && s.Expires < before.UnixNano() {
				o.tx.Clear(k)
				removed++
			}
		}
		return nil
	})
	return removed, err
}
