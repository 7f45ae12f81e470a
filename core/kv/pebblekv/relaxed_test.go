package pebblekv_test

import (
	"context"
	"fmt"
	"github.com/flyfs/flyfs/core/durability"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/pebblekv"
)

// The machine-crash side of relaxed commits, on an in-memory file system
// whose crash clone keeps what was synced and, at random, some of what was
// not: a sync makes every earlier acknowledged commit survive; without one,
// what survives is a prefix of the commits, each whole.

// commitSeq commits n transactions under ctx, each writing "seq/<i>" and
// moving "last" to i in the same transaction.
func commitSeq(t *testing.T, ctx context.Context, db *kv.DB, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		err := db.Run(ctx, func(tx kv.Txn) error {
			tx.Set([]byte(fmt.Sprintf("seq/%06d", i)), []byte(fmt.Sprint(i)))
			tx.Set([]byte("last"), []byte(fmt.Sprint(i)))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// survivors opens a crash clone and returns how many of the sequence it
// holds, failing unless they are exactly seq/0 .. seq/n-1 with last = n-1.
func survivors(t *testing.T, fs vfs.FS) int {
	t.Helper()
	db, err := pebblekv.Open("db", pebblekv.Options{FS: fs})
	if err != nil {
		t.Fatalf("open the crashed store: %v", err)
	}
	defer db.Close()
	n, last := 0, -1
	err = db.RunRead(context.Background(), func(tx kv.ReadTxn) error {
		res, err := tx.GetRange(context.Background(), []byte("seq/"), []byte("seq0"), kv.RangeOptions{})
		if err != nil {
			return err
		}
		for i, x := range res.KVs {
			if string(x.Key) != fmt.Sprintf("seq/%06d", i) {
				return fmt.Errorf("commit %d is missing but %s survived: not a prefix", i, x.Key)
			}
		}
		n = len(res.KVs)
		v, found, err := tx.Get(context.Background(), []byte("last"))
		if found {
			fmt.Sscan(string(v), &last)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if last != n-1 {
		t.Fatalf("%d commits survived but last says %d: a transaction survived in part", n, last)
	}
	return n
}

// relaxedCtxs are the two kinds of relaxed commit: a remote caller's (its
// WAL record written before the acknowledgement) and an in-process one's
// (only queued).
var relaxedCtxs = []struct {
	name string
	ctx  context.Context
}{
	{"remote caller", durability.Relaxed(context.Background())},
	{"in-process caller", durability.InProcess(durability.Relaxed(context.Background()))},
}

func TestRelaxedCommitsDurableAfterSync(t *testing.T) {
	for _, rc := range relaxedCtxs {
		t.Run(rc.name, func(t *testing.T) { testRelaxedDurableAfterSync(t, rc.ctx) })
	}
}

func testRelaxedDurableAfterSync(t *testing.T, ctx context.Context) {
	fs := vfs.NewCrashableMem()
	db, err := pebblekv.Open("db", pebblekv.Options{FS: fs, SyncWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	commitSeq(t, ctx, db, 0, 200)
	if err := db.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := survivors(t, fs.CrashClone(vfs.CrashCloneCfg{})); n != 200 {
		t.Fatalf("after Sync a machine crash kept %d of 200 relaxed commits", n)
	}
	// Relaxed commits after the sync: a crash keeps the synced ones and a
	// prefix of the rest, whatever part of the unsynced bytes it keeps.
	commitSeq(t, ctx, db, 200, 300)
	rng := rand.New(rand.NewPCG(1, 2))
	kept := map[int]bool{}
	for i := 0; i < 8; i++ {
		n := survivors(t, fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rng}))
		if n < 200 {
			t.Fatalf("a crash lost synced commits: %d of 200 kept", n)
		}
		kept[n] = true
	}
	t.Logf("crash clones kept %v of 500 commits", kept)
	// A durable commit makes the relaxed ones before it durable too.
	commitSeq(t, context.Background(), db, 500, 1)
	if n := survivors(t, fs.CrashClone(vfs.CrashCloneCfg{})); n != 501 {
		t.Fatalf("after a durable commit a crash kept %d of 501", n)
	}
}

func TestRelaxedCommitsDurableWithinWindow(t *testing.T) {
	for _, rc := range relaxedCtxs {
		t.Run(rc.name, func(t *testing.T) { testRelaxedDurableWithinWindow(t, rc.ctx) })
	}
}

func testRelaxedDurableWithinWindow(t *testing.T, ctx context.Context) {
	fs := vfs.NewCrashableMem()
	db, err := pebblekv.Open("db", pebblekv.Options{FS: fs, SyncWindow: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	commitSeq(t, ctx, db, 0, 50)
	// The background sync runs every window; give a loaded machine many.
	deadline := time.Now().Add(30 * time.Second)
	for survivors(t, fs.CrashClone(vfs.CrashCloneCfg{})) != 50 {
		if time.Now().After(deadline) {
			t.Fatal("relaxed commits were not made durable by the background sync within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRelaxedCommitsSkipTheFsync: relaxed commits with no sync since are
// not on the disk yet (what makes them cheap): a crash that keeps nothing
// unsynced loses them.
func TestRelaxedCommitsSkipTheFsync(t *testing.T) {
	for _, rc := range relaxedCtxs {
		t.Run(rc.name, func(t *testing.T) { testRelaxedSkipTheFsync(t, rc.ctx) })
	}
}

func testRelaxedSkipTheFsync(t *testing.T, ctx context.Context) {
	fs := vfs.NewCrashableMem()
	db, err := pebblekv.Open("db", pebblekv.Options{FS: fs, SyncWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	commitSeq(t, context.Background(), db, 0, 10)
	commitSeq(t, ctx, db, 10, 100)
	if n := survivors(t, fs.CrashClone(vfs.CrashCloneCfg{})); n != 10 {
		t.Fatalf("a crash keeping only synced bytes kept %d commits, want the 10 durable ones: relaxed commits were synced", n)
	}
}

// TestStrictCommitsDurable: without a window, and for commits that are
// not relaxed, every acknowledged commit survives a machine crash.
func TestStrictCommitsDurable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window time.Duration
		ctx    context.Context
	}{
		{"relaxed without a window", 0, durability.Relaxed(context.Background())},
		{"strict with a window", time.Hour, context.Background()},
		{"strict over relaxed", time.Hour, durability.Strict(durability.Relaxed(context.Background()))},
	} {
		fs := vfs.NewCrashableMem()
		db, err := pebblekv.Open("db", pebblekv.Options{FS: fs, SyncWindow: tc.window})
		if err != nil {
			t.Fatal(err)
		}
		commitSeq(t, tc.ctx, db, 0, 30)
		if n := survivors(t, fs.CrashClone(vfs.CrashCloneCfg{})); n != 30 {
			t.Errorf("%s: a machine crash kept %d of 30 acknowledged commits", tc.name, n)
		}
		db.Close()
	}
}

// TestStrictCommitMakesEarlierRelaxedDurable: a durable commit makes every
// relaxed commit before it durable with it (the log is written in order),
// which the S3 gateway relies on: a staging file's changes are relaxed,
// and its publish is durable.
func TestStrictCommitMakesEarlierRelaxedDurable(t *testing.T) {
	for _, rc := range relaxedCtxs {
		fs := vfs.NewCrashableMem()
		db, err := pebblekv.Open("db", pebblekv.Options{FS: fs, SyncWindow: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		commitSeq(t, rc.ctx, db, 0, 30)
		commitSeq(t, context.Background(), db, 30, 1)
		for range 5 { // the unsynced rest of the file is kept at random
			if n := survivors(t, fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rand.New(rand.NewPCG(1, 2))})); n != 31 {
				t.Errorf("%s: a machine crash after a durable commit kept %d of 31 commits", rc.name, n)
			}
		}
		db.Close()
	}
}
