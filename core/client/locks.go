package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// File locks (fcntl and flock) every client of the cluster sees. They are
// held under this client's lock session, which a goroutine renews while
// the client runs (from its first lock on): if the client dies, or loses
// the cluster for longer than LockTTL, its locks are released; Close ends
// the session, releasing them at once.

const (
	// LockTTL is how long a silent client's locks outlive it.
	LockTTL = 20 * time.Second
	// lockRenew is how often the session is renewed.
	lockRenew = LockTTL / 4
	// lockWaitMax caps the wait between attempts of a blocking lock.
	lockWaitMax = 250 * time.Millisecond
)

type lockSession struct {
	mu      sync.Mutex
	id      string
	started bool
	stop    chan struct{}
	done    chan struct{}
}

// LockClient is the name of this client's lock session (the Client of the
// locks it holds).
func (fs *FS) LockClient() string {
	s := &fs.locks
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.id == "" {
		var b [12]byte
		rand.Read(b[:])
		s.id = hex.EncodeToString(b[:])
	}
	return s.id
}

func (fs *FS) renewLocks(ctx context.Context, id string) error {
	_, err := callMeta(ctx, fs, func(c metaapi.Client) (*metaapi.Empty, error) {
		return c.LockSession(ctx, &metaapi.LockSessionReq{Client: id, TTLms: LockTTL.Milliseconds()})
	})
	return err
}

// ensureLockSession makes the session live and starts its renewals.
func (fs *FS) ensureLockSession(ctx context.Context) error {
	id := fs.LockClient()
	s := &fs.locks
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		return nil
	}
	if err := fs.renewLocks(ctx, id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return nil
	}
	s.started, s.stop, s.done = true, make(chan struct{}), make(chan struct{})
	go func(stop, done chan struct{}) {
		defer close(done)
		t := time.NewTicker(lockRenew)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			rctx, cancel := context.WithTimeout(context.Background(), lockRenew)
			fs.renewLocks(rctx, id) // a failure is retried at the next tick
			cancel()
		}
	}(s.stop, s.done)
	return nil
}

// endLocks stops the renewals and ends the session (Close).
func (fs *FS) endLocks() {
	s := &fs.locks
	s.mu.Lock()
	started, stop, done, id := s.started, s.stop, s.done, s.id
	s.started = false
	s.mu.Unlock()
	if !started {
		return
	}
	close(stop)
	<-done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	callMeta(ctx, fs, func(c metaapi.Client) (*metaapi.Empty, error) {
		return c.LockSession(ctx, &metaapi.LockSessionReq{Client: id})
	})
}

// GetLock returns a lock of another holder that l conflicts with
// (F_GETLK); l.Client is this client's.
func (m *Meta) GetLock(ctx context.Context, ino uint64, class uint8, l metaapi.FileLock) (metaapi.FileLock, bool, error) {
	l.Client = m.fs.LockClient()
	req := &metaapi.LockReq{Ino: ino, Class: class, Lock: l}
	r, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.GetLockResp, error) { return c.GetLock(ctx, req) })
	if err != nil {
		return metaapi.FileLock{}, false, err
	}
	return r.Lock, r.Found, nil
}

// SetLock sets (or, unlock, releases) l without waiting: EAGAIN when
// another holder's lock conflicts.
func (m *Meta) SetLock(ctx context.Context, ino uint64, class uint8, l metaapi.FileLock, unlock bool) error {
	if !unlock {
		if err := m.fs.ensureLockSession(ctx); err != nil {
			return err
		}
	}
	l.Client = m.fs.LockClient()
	req := &metaapi.LockReq{Ino: ino, Class: class, Lock: l, Unlock: unlock}
	set := func() error {
		_, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.Empty, error) { return c.SetLock(ctx, req) })
		return err
	}
	err := set()
	if errnoOf(err) == syscall.ENOLCK {
		// The session lapsed (the cluster was out of reach): renew it, once.
		if err = m.fs.renewLocks(ctx, l.Client); err == nil {
			err = set()
		}
	}
	return err
}

// SetLockWait is SetLock that waits while another holder's lock
// conflicts; it ends with EINTR when ctx does (the waiter interrupted).
func (m *Meta) SetLockWait(ctx context.Context, ino uint64, class uint8, l metaapi.FileLock) error {
	wait := 5 * time.Millisecond
	for {
		err := m.SetLock(ctx, ino, class, l, false)
		if errnoOf(err) != syscall.EAGAIN {
			if err != nil && ctx.Err() != nil {
				return errnoError(syscall.EINTR)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return errnoError(syscall.EINTR)
		case <-time.After(wait):
		}
		wait = min(2*wait, lockWaitMax)
	}
}

func errnoOf(err error) syscall.Errno {
	if e := metaapi.Errno(err); e != 0 {
		return e
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return 0
}

func errnoError(e syscall.Errno) error { return metaapi.ErrnoError(e, e.Error()) }
