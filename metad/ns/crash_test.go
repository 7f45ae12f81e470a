package ns

import (
	"context"
	"github.com/flyfs/flyfs/core/durability"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/pebblekv"
)

// Machine crashes under relaxed commits (durability.Relaxed, what a mount asks
// for): the store is Pebble on an in-memory file system whose crash clone
// keeps what was synced and, at random, part of what was not.

// crashableEnv is a namespace on Pebble over a crashable in-memory file
// system, with relaxed commits that only Sync (or a durable commit) makes
// durable.
func crashableEnv(t *testing.T, opts Options) (*tenv, *vfs.MemFS) {
	t.Helper()
	fs := vfs.NewCrashableMem()
	db, err := pebblekv.Open("meta", pebblekv.Options{FS: fs, SyncWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	n, err := New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &tenv{t: t, db: db, ns: n, ids: map[string]uint64{}, reqs: map[string]RequestID{}, sess: map[string]Session{}}, fs
}

// afterCrash opens the store as a machine crash now could leave it.
func afterCrash(t *testing.T, fs *vfs.MemFS, cfg vfs.CrashCloneCfg) *kv.DB {
	t.Helper()
	db, err := pebblekv.Open("meta", pebblekv.Options{FS: fs.CrashClone(cfg)})
	if err != nil {
		t.Fatalf("open the store after a crash: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// relaxedCtx runs the test with every namespace call relaxed (the helpers
// use the package's ctx).
func relaxedCtx(t *testing.T) {
	old := ctx
	ctx = durability.Relaxed(context.Background())
	t.Cleanup(func() { ctx = old })
}

// TestSemanticsAfterMachineCrash runs the operation table with relaxed
// commits and, after every step, crashes a copy of the machine: each copy
// holds a consistent namespace (fsck clean), because what survives is a
// prefix of the commits, each whole. After a Sync a crash loses nothing.
func TestSemanticsAfterMachineCrash(t *testing.T) {
	relaxedCtx(t)
	e, fs := crashableEnv(t, testOpts())
	rng := rand.New(rand.NewPCG(7, 11))
	for i, s := range script() {
		if werr := wantErrno(s.do(e), s.want); werr != nil {
			t.Fatalf("step %q: %v", s.name, werr)
		}
		if s.name == "mkdir /a" {
			e.ids["a"], _ = e.ino("/a")
		}
		if i%3 != 0 {
			continue
		}
		crashed := afterCrash(t, fs, vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
		r, err := Check(context.Background(), crashed)
		if err != nil {
			t.Fatalf("after step %q, fsck of the crashed store: %v", s.name, err)
		}
		if !r.Clean() {
			t.Fatalf("after step %q, a machine crash left an inconsistent namespace: %s", s.name, r.String())
		}
		crashed.Close()
	}
	if err := e.ns.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	crashed := afterCrash(t, fs, vfs.CrashCloneCfg{})
	n, err := New(crashed, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dumpTree(t, n), dumpTree(t, e.ns); got != want {
		t.Fatalf("after Sync a machine crash changed the tree:\n%s\n--- want\n%s", got, want)
	}
}

// TestInodeIDsNotReusedAfterMachineCrash: files created relaxed are lost
// in a crash, but their ids are not handed out again (chunks are named
// after them: a reused id would read a lost file's chunks).
func TestInodeIDsNotReusedAfterMachineCrash(t *testing.T) {
	relaxedCtx(t)
	e, fs := crashableEnv(t, testOpts())
	lost := map[uint64]bool{}
	for i := range 20 {
		r, err := e.create("/f"+string(rune('a'+i)), true)
		if err != nil {
			t.Fatal(err)
		}
		lost[r.Inode.ID] = true
	}
	crashed := afterCrash(t, fs, vfs.CrashCloneCfg{})
	n, err := New(crashed, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Resolve(ctx, "/fa", false); errnoOf(err) != ErrNotExist {
		t.Fatalf("a relaxed create survived a crash with nothing synced (%v): the test proves nothing", err)
	}
	// Every batch the lost files' ids came from is claimed again after the
	// crash: the next batch of its shard must come after it.
	for id := range lost {
		shard, _, ok := batchOf(id)
		if !ok {
			t.Fatalf("id %d is below the first batch", id)
		}
		base, err := claimBatch(ctx, crashed, shard)
		if err != nil {
			t.Fatal(err)
		}
		if id >= base {
			t.Fatalf("after the crash shard %d hands out ids from %d again, where lost file %d came from", shard, base, id)
		}
	}
}

// TestGCClaimMakesRemovalDurable: the GC deletes a removed file's chunks
// only after its claim, which is durable and so makes the removal before it
// durable: no crash brings back a file whose chunks are gone.
func TestGCClaimMakesRemovalDurable(t *testing.T) {
	relaxedCtx(t)
	opts := testOpts()
	opts.NewFileLayout = func(l Layout, ino uint64) Layout {
		l.TableID, l.TableVersion, l.ChunkSize, l.Stripe = 1, 1, 1<<20, 1
		return l
	}
	e, fs := crashableEnv(t, opts)
	if _, err := e.create("/doomed", true); err != nil {
		t.Fatal(err)
	}
	if err := e.ns.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.unlink("/doomed"); err != nil {
		t.Fatal(err)
	}
	removed, err := e.ns.GCBatchGrace(ctx, 16, 0)
	if err != nil || len(removed) != 1 {
		t.Fatalf("GC took %d entries (%v), want the removed file", len(removed), err)
	}
	// Here the GC deletes the chunks. A crash now must not bring the file back.
	crashed := afterCrash(t, fs, vfs.CrashCloneCfg{})
	n, err := New(crashed, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Resolve(ctx, "/doomed", false); errnoOf(err) != ErrNotExist {
		t.Fatalf("after a crash the removed file is back (%v) though the GC took it", err)
	}
	mustFsck(t, crashed)
}
