package ns

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestLockSet: POSIX record-lock semantics, row by row: a holder's ranges
// are replaced, split and merged; other holders' stay.
func TestLockSet(t *testing.T) {
	a, b := LockOwner{"A", 1}, LockOwner{"B", 1}
	r := func(h LockOwner, k LockKind, s, e uint64) RangeLock {
		return RangeLock{Holder: h, Kind: k, Start: s, End: e}
	}
	for _, tc := range []struct {
		name   string
		held   []RangeLock
		req    RangeLock
		unlock bool
		want   []RangeLock
	}{
		{"a first lock", nil, r(a, LockWrite, 0, 9), false, []RangeLock{r(a, LockWrite, 0, 9)}},
		{"touching ranges of one kind merge", []RangeLock{r(a, LockRead, 0, 9)}, r(a, LockRead, 10, 19), false, []RangeLock{r(a, LockRead, 0, 19)}},
		{"a gap keeps them apart", []RangeLock{r(a, LockRead, 0, 9)}, r(a, LockRead, 11, 19), false, []RangeLock{r(a, LockRead, 0, 9), r(a, LockRead, 11, 19)}},
		{"an upgrade in the middle splits", []RangeLock{r(a, LockRead, 0, 99)}, r(a, LockWrite, 40, 59), false,
			[]RangeLock{r(a, LockRead, 0, 39), r(a, LockWrite, 40, 59), r(a, LockRead, 60, 99)}},
		{"an unlock in the middle splits", []RangeLock{r(a, LockWrite, 0, 99)}, r(a, 0, 40, 59), true, []RangeLock{r(a, LockWrite, 0, 39), r(a, LockWrite, 60, 99)}},
		{"an unlock of everything", []RangeLock{r(a, LockWrite, 0, 9), r(a, LockRead, 20, LockEOF)}, r(a, 0, 0, LockEOF), true, []RangeLock{}},
		{"to the end of the file", []RangeLock{r(a, LockRead, 100, LockEOF)}, r(a, LockRead, 0, 99), false, []RangeLock{r(a, LockRead, 0, LockEOF)}},
		{"another holder's ranges stay", []RangeLock{r(b, LockRead, 0, 99)}, r(a, LockRead, 50, 59), false, []RangeLock{r(a, LockRead, 50, 59), r(b, LockRead, 0, 99)}},
		{"an unlock leaves another holder's", []RangeLock{r(a, LockRead, 0, 9), r(b, LockRead, 0, 9)}, r(a, 0, 0, 9), true, []RangeLock{r(b, LockRead, 0, 9)}},
		{"a downgrade over two ranges", []RangeLock{r(a, LockWrite, 0, 9), r(a, LockWrite, 20, 29)}, r(a, LockRead, 5, 24), false,
			[]RangeLock{r(a, LockWrite, 0, 4), r(a, LockRead, 5, 24), r(a, LockWrite, 25, 29)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := slices.Clone(tc.held)
			got := lockSet(held, tc.req, tc.unlock)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if !slices.Equal(held, tc.held) {
				t.Fatal("lockSet changed its input")
			}
		})
	}
	for _, tc := range []struct {
		name     string
		held     RangeLock
		req      RangeLock
		conflict bool
	}{
		{"two readers", r(b, LockRead, 0, 9), r(a, LockRead, 0, 9), false},
		{"a reader and a writer", r(b, LockRead, 0, 9), r(a, LockWrite, 5, 5), true},
		{"a writer and a reader", r(b, LockWrite, 0, 9), r(a, LockRead, 9, 20), true},
		{"no overlap", r(b, LockWrite, 0, 9), r(a, LockWrite, 10, 20), false},
		{"the same holder", r(a, LockWrite, 0, 9), r(a, LockWrite, 0, 9), false},
		{"another owner of the same client", r(LockOwner{"A", 2}, LockWrite, 0, 9), r(a, LockRead, 0, 0), true},
	} {
		if _, got := lockConflict([]RangeLock{tc.held}, tc.req); got != tc.conflict {
			t.Errorf("%s: conflict %v, want %v", tc.name, got, tc.conflict)
		}
	}
}

// TestLocksAcrossClients: two clients' sessions on one file; a conflict
// is EAGAIN, F_GETLK names the holder, an unlock frees, an ended session
// frees at once and an expired one when its time runs out; the two classes
// (fcntl, flock) do not see each other.
func TestLocksAcrossClients(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	opts := testOpts()
	opts.Now = clock
	e := newEnv(t, nil, opts)
	res, err := e.create("/f", true)
	if err != nil {
		t.Fatal(err)
	}
	ino := res.Inode.ID
	n := e.ns
	a, b := LockOwner{"client-a", 7}, LockOwner{"client-b", 7}
	w := func(h LockOwner, s, end uint64) RangeLock {
		return RangeLock{Holder: h, Kind: LockWrite, Start: s, End: end, Pid: 42}
	}
	if err := n.SetLock(ctx, ino, LockPOSIX, w(a, 0, 9), false); !errors.Is(err, ErrNoLock) {
		t.Fatalf("a lock without a session: %v", err)
	}
	for _, c := range []string{"client-a", "client-b"} {
		if err := n.RenewLockSession(ctx, c, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.SetLock(ctx, ino, LockPOSIX, w(a, 0, 9), false); err != nil {
		t.Fatal(err)
	}
	if err := n.SetLock(ctx, ino, LockPOSIX, w(b, 5, 20), false); !errors.Is(err, ErrAgain) {
		t.Fatalf("a conflicting lock: %v", err)
	}
	if got, ok, err := n.GetLock(ctx, ino, LockPOSIX, w(b, 5, 20)); err != nil || !ok || got.Holder != a || got.Pid != 42 {
		t.Fatalf("F_GETLK: %v %v %+v", err, ok, got)
	}
	if err := n.SetLock(ctx, ino, LockPOSIX, w(b, 10, 20), false); err != nil {
		t.Fatalf("a lock beside it: %v", err)
	}
	if err := n.SetLock(ctx, ino, LockFlock, w(b, 0, LockEOF), false); err != nil {
		t.Fatalf("flock beside fcntl locks: %v", err)
	}
	if err := n.SetLock(ctx, ino, LockPOSIX, w(a, 0, 9), true); err != nil {
		t.Fatal(err)
	}
	if err := n.SetLock(ctx, ino, LockPOSIX, w(b, 0, 9), false); err != nil {
		t.Fatalf("after the unlock: %v", err)
	}
	// client-b ends its session: all of its locks go at once.
	if err := n.EndLockSession(ctx, "client-b"); err != nil {
		t.Fatal(err)
	}
	if err := n.SetLock(ctx, ino, LockFlock, w(a, 0, LockEOF), false); err != nil {
		t.Fatalf("after the holder's session ended: %v", err)
	}
	// client-a stops renewing: its locks hold until the session expires.
	if err := n.RenewLockSession(ctx, "client-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	advance(9 * time.Second)
	if err := n.SetLock(ctx, ino, LockFlock, w(b, 0, LockEOF), false); !errors.Is(err, ErrAgain) {
		t.Fatalf("before the holder's session expired: %v", err)
	}
	advance(2 * time.Second)
	if err := n.SetLock(ctx, ino, LockFlock, w(b, 0, LockEOF), false); err != nil {
		t.Fatalf("after the holder's session expired: %v", err)
	}
	if _, ok, err := n.GetLock(ctx, ino, LockFlock, w(a, 0, 0)); err != nil || !ok {
		t.Fatalf("F_GETLK of b's flock: %v %v", err, ok)
	}
	if err := n.SetLock(ctx, ino, LockPOSIX, RangeLock{Holder: a, Kind: 9, Start: 0, End: 1}, false); !errors.Is(err, ErrInvalid) {
		t.Errorf("a bad kind: %v", err)
	}
	if err := n.SetLock(ctx, 999999, LockPOSIX, w(b, 0, 1), false); !errors.Is(err, ErrNotExist) {
		t.Errorf("a lock on no file: %v", err)
	}
	// Expired sessions are purged; live ones stay.
	advance(time.Minute)
	if err := n.RenewLockSession(ctx, "client-c", time.Minute); err != nil {
		t.Fatal(err)
	}
	if removed, err := n.PurgeLockSessions(ctx, clock()); err != nil || removed != 2 {
		t.Fatalf("purge: %v, %d removed, want client-a and client-b", err, removed)
	}
	if err := n.SetLock(ctx, ino, LockPOSIX, w(LockOwner{"client-c", 1}, 0, LockEOF), false); err != nil {
		t.Fatalf("the live session after the purge: %v", err)
	}
	// A removed file's lock tables go with it.
	if err := e.ns.Unlink(ctx, RemoveRequest{Parent: RootID, Name: "f"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ns.GCBatchGrace(ctx, 100, 0); err != nil {
		t.Fatal(err)
	}
	mustFsck(t, e.db)
}
