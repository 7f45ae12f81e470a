package ns

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
)

// snapTree builds /data/run with files (written with a layout), a
// subdirectory, a symlink, a hard link and a fifo, and /data/open open for
// writing; it returns the open file's session.
func snapTree(t *testing.T, e *tenv) Session {
	t.Helper()
	lay := Layout{TableID: 1, TableVersion: 1, ChunkSize: 1 << 20, Stripe: 1}
	for _, d := range []string{"/data", "/data/run", "/data/run/sub"} {
		if _, err := e.mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	file := func(path string, length uint64) {
		p, name, err := e.pn(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.ns.Create(ctx, CreateRequest{Parent: p, Name: name, Mode: 0o640, UID: 5, Layout: &lay, Write: true, Exclusive: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.ns.Close(ctx, *r.Session, &LengthHint{Length: length, Wrote: true}); err != nil {
			t.Fatal(err)
		}
	}
	file("/data/run/a", 3<<20)
	file("/data/run/b", 10)
	file("/data/run/sub/c", 1<<20)
	if _, err := e.symlink("/data/run/l", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.link("/data/run/a", "/data/run/sub/h"); err != nil {
		t.Fatal(err)
	}
	p, _, _ := e.pn("/data/run/fifo")
	if _, err := e.ns.Mknod(ctx, MknodRequest{Parent: p, Name: "fifo", Type: TypeFifo, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	a, _ := e.stat("/data/run/a")
	if err := e.ns.SetXattr(ctx, a.ID, "user.tag", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	dp, _, _ := e.pn("/data/open")
	r, err := e.ns.Create(ctx, CreateRequest{Parent: dp, Name: "open", Mode: 0o644, Layout: &lay, Write: true, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	return *r.Session
}

// listing renders a tree below path: name, type, mode, owner, length,
// symlink target and nlink, one line per entry, sorted.
func listing(t *testing.T, e *tenv, path string) string {
	t.Helper()
	var lines []string
	var walk func(p, rel string)
	walk = func(p, rel string) {
		names, err := e.names(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			in, err := e.stat(p + "/" + n)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, fmt.Sprintf("%s/%s %s %o %d %d %q %d", rel, n, in.Type, in.Mode, in.UID, in.Length, in.Target, in.Nlink))
			if in.Type == TypeDir {
				walk(p+"/"+n, rel+"/"+n)
			}
		}
	}
	walk(path, "")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestSnapshot: a snapshot copies a tree at one moment (files sharing
// chunks, links kept), lives under the top directory, refuses every change,
// keeps its top directory from removal, leaves the live tree writable, and
// goes with DeleteSnapshot, GC and fsck clean.
func TestSnapshot(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	open := snapTree(t, e)
	run, _ := e.stat("/data/run")
	before := listing(t, e, "/data/run")

	info, err := e.ns.Snapshot(ctx, SnapshotRequest{ReqID: e.req("s1"), Dir: run.ID, Name: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Path != "/data/.flyfs-snapshots/s1/run" || info.Source != "/data/run" || info.Files != 3 || info.Dirs != 2 || info.Others != 2 || info.Bytes != 4<<20+10 {
		t.Fatalf("snapshot: %+v", info)
	}
	if got := listing(t, e, info.Path); got != before {
		t.Fatalf("snapshot tree:\n%s\nsource:\n%s", got, before)
	}
	sa, _ := e.stat(info.Path + "/a")
	sh, _ := e.stat(info.Path + "/sub/h")
	if sa.ID != sh.ID || sa.Nlink != 2 || !sa.ReadOnly || len(sa.Layers) != 1 {
		t.Fatalf("snapshot's a: %+v (h %d)", sa, sh.ID)
	}
	if x, err := e.ns.GetXattr(ctx, sa.ID, "user.tag"); err != nil || string(x) != "x" {
		t.Fatalf("snapshot's xattr: %q %v", x, err)
	}
	// A retry of the same request returns it; another request of the name
	// is EEXIST.
	if again, err := e.ns.Snapshot(ctx, SnapshotRequest{ReqID: e.req("s1"), Dir: run.ID, Name: "s1"}); err != nil || again.Root != info.Root {
		t.Fatalf("retry: %+v %v", again, err)
	}
	if _, err := e.ns.Snapshot(ctx, SnapshotRequest{Dir: run.ID, Name: "s1"}); !errors.Is(err, ErrExist) {
		t.Fatalf("same name again: %v", err)
	}

	// Nothing in it changes.
	sp, _ := e.stat(info.Path)
	ro := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s in a snapshot: %v, want EROFS", what, err)
		}
	}
	_, err = e.ns.Create(ctx, CreateRequest{Parent: sp.ID, Name: "new", Mode: 0o644})
	ro("create", err)
	_, err = e.mkdir(info.Path + "/d")
	ro("mkdir", err)
	ro("unlink", e.unlink(info.Path+"/b"))
	ro("rmdir", e.rmdir(info.Path+"/sub"))
	ro("remove -r", e.ns.RemoveAll(ctx, RemoveRequest{Parent: sp.ID, Name: "sub"}))
	ro("rename out", e.rename(info.Path+"/b", "/data/b", 0))
	ro("rename in", e.rename("/data/run/b", info.Path+"/b2", 0))
	ro("rename of the snapshot", e.rename(info.Path, "/data/x", 0))
	_, err = e.ns.SetAttr(ctx, sa.ID, SetAttrRequest{Mask: SetMode, Mode: 0o777})
	ro("chmod", err)
	_, err = e.ns.Truncate(ctx, sa.ID, 0)
	ro("truncate", err)
	ro("setxattr", e.ns.SetXattr(ctx, sa.ID, "user.k", []byte("v"), 0))
	ro("removexattr", e.ns.RemoveXattr(ctx, sa.ID, "user.tag"))
	_, err = e.ns.Open(ctx, sa.ID, syscall.O_WRONLY, ClientID("w"))
	ro("open for writing", err)
	_, err = e.link(info.Path+"/b", "/data/blink")
	ro("link", err)
	ro("remove the snapshots' directory", e.ns.RemoveAll(ctx, RemoveRequest{Parent: mustIno(e, "/data"), Name: SnapshotDir}))
	if err := e.ns.RemoveAll(ctx, RemoveRequest{Parent: RootID, Name: "data"}); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("remove -r of the top directory holding snapshots: %v", err)
	}
	// Copying out of it is how a file is restored.
	if _, err := e.ns.Clone(ctx, CloneRequest{Src: sa.ID, Parent: run.ID, Name: "a.restored", Mode: 0o644}); err != nil {
		t.Fatalf("clone out of a snapshot: %v", err)
	}

	// The live tree goes on: a's write leaves the snapshot's a as it was.
	a, _ := e.stat("/data/run/a")
	w, err := e.ns.Open(ctx, a.ID, syscall.O_WRONLY, ClientID("w"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ns.Close(ctx, *w.Session, &LengthHint{TruncateVer: a.TruncateVer, Length: 9 << 20, Wrote: true}); err != nil {
		t.Fatal(err)
	}
	if sa2, _ := e.stat(info.Path + "/a"); sa2.Length != 3<<20 || !slices.Equal(sa2.Layers, sa.Layers) {
		t.Fatalf("snapshot's a after the live a grew: %+v", sa2)
	}
	mustFsck(t, e.db)

	// A snapshot of the whole top directory: the file open for writing is
	// not captured, the snapshots are not copied into it.
	data, _ := e.stat("/data")
	whole, err := e.ns.Snapshot(ctx, SnapshotRequest{Dir: data.ID, Name: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(whole.Skipped, []string{"open (open for writing)"}) || whole.Path != "/data/.flyfs-snapshots/s2" {
		t.Fatalf("whole top directory: %+v", whole)
	}
	if names, _ := e.names(whole.Path); slices.Contains(names, SnapshotDir) || !slices.Contains(names, "run") || slices.Contains(names, "open") {
		t.Fatalf("whole top directory's snapshot holds %v", names)
	}
	if _, err := e.ns.Snapshot(ctx, SnapshotRequest{Dir: RootID, Name: "x"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("snapshot of the root: %v", err)
	}
	if _, err := e.ns.Snapshot(ctx, SnapshotRequest{Dir: sp.ID, Name: "x"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("snapshot inside a snapshot: %v", err)
	}
	list, err := e.ns.ListSnapshots(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "s1" || list[1].Name != "s2" {
		t.Fatalf("list: %+v %v", list, err)
	}
	mustFsck(t, e.db)

	// Delete both: the trees go through GC, the directory with the last.
	if _, err := e.ns.Close(ctx, open, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"s1", "s2"} {
		if err := e.ns.DeleteSnapshot(ctx, NewRequestID(), data.ID, name); err != nil {
			t.Fatal(err)
		}
		drainGC(t, e.ns)
		mustFsck(t, e.db)
	}
	if names, _ := e.names("/data"); slices.Contains(names, SnapshotDir) {
		t.Fatalf("the snapshots' directory outlived its snapshots: %v", names)
	}
	if err := e.ns.DeleteSnapshot(ctx, NewRequestID(), data.ID, "s1"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("delete of a deleted snapshot: %v", err)
	}
	if got := listing(t, e, "/data/run"); !strings.Contains(got, "/a file 640 5 9437184") {
		t.Fatalf("live tree after the snapshots went:\n%s", got)
	}
	if err := e.ns.RemoveAll(ctx, RemoveRequest{Parent: RootID, Name: "data"}); err != nil {
		t.Fatal(err)
	}
	drainGC(t, e.ns)
	mustFsck(t, e.db)
}

// TestSnapshotUnderFaults: snapshots made and deleted while commits report
// "maybe committed" and reads fail: each retry finds its own work, and the
// namespace stays consistent.
func TestSnapshotUnderFaults(t *testing.T) {
	e := newEnv(t, &kv.Faults{ReadRate: 0.01, CommitRate: 0.3, Seed: 11}, testOpts())
	snapTree(t, e)
	run, err := e.stat("/data/run")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := e.stat("/data")
	for i := 0; i < 6; i++ {
		name := fmt.Sprintf("s%d", i)
		if _, err := e.ns.Snapshot(ctx, SnapshotRequest{Dir: run.ID, Name: name}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			if err := e.ns.DeleteSnapshot(ctx, NewRequestID(), data.ID, fmt.Sprintf("s%d", i-1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	drainGC(t, e.ns)
	mustFsck(t, e.db)
	list, err := e.ns.ListSnapshots(ctx)
	if err != nil || len(list) != 3 {
		t.Fatalf("list: %d %v", len(list), err)
	}
	if c := e.db.FaultCounts(); c.MaybeCommitted == 0 {
		t.Fatalf("no commit reported maybe committed: %+v", c)
	}
}

// A tree larger than one transaction is copied in batches while the
// namespace is frozen: a writer changing two directories in turn all the
// while finds its changes waiting, and the snapshot holds a cut of its
// sequence (each directory a prefix, the two at most one apart), as a
// snapshot of one moment must.
func TestSnapshotInBatchesIsOneMoment(t *testing.T) {
	db := memkv.Open(kv.Options{MaxTxnBytes: 150_000})
	t.Cleanup(func() { db.Close() })
	n, err := New(db, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	e := &tenv{t: t, db: db, ns: n, ids: map[string]uint64{}, reqs: map[string]RequestID{}, sess: map[string]Session{}}
	lay := Layout{TableID: 1, TableVersion: 1, ChunkSize: 1 << 20, Stripe: 1}
	for _, d := range []string{"/data", "/data/run", "/data/run/bulk", "/data/run/a", "/data/run/b"} {
		if _, err := e.mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	bulk, _ := e.stat("/data/run/bulk")
	for i := 0; i < 1500; i++ {
		r, err := e.ns.Create(ctx, CreateRequest{Parent: bulk.ID, Name: fmt.Sprintf("f%04d", i), Mode: 0o644, Layout: &lay, Write: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.ns.Close(ctx, *r.Session, &LengthHint{Length: 1 << 20, Wrote: true}); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := e.stat("/data/run/a")
	b, _ := e.stat("/data/run/b")
	var pairs atomic.Int64
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			for _, dir := range []uint64{a.ID, b.ID} {
				if _, err := e.ns.Create(ctx, CreateRequest{Parent: dir, Name: fmt.Sprintf("n%06d", i), Mode: 0o644}); err != nil {
					t.Error(err)
				}
			}
			pairs.Add(1)
		}
	}()
	for pairs.Load() < 100 {
		time.Sleep(time.Millisecond)
	}
	run, _ := e.stat("/data/run")
	info, err := e.ns.Snapshot(ctx, SnapshotRequest{Dir: run.ID, Name: "big"})
	if err != nil {
		close(stop)
		<-stopped
		t.Fatal(err)
	}
	na, _ := e.names(info.Path + "/a")
	// The writer goes on after the thaw.
	for pairs.Load() < int64(len(na))+10 {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	<-stopped
	if info.Batches < 2 {
		t.Fatalf("copied in %d transaction(s): the bound did not split it", info.Batches)
	}
	nb, _ := e.names(info.Path + "/b")
	prefix := func(names []string) bool {
		for i, n := range names {
			if n != fmt.Sprintf("n%06d", i) {
				return false
			}
		}
		return true
	}
	if !prefix(na) || !prefix(nb) || len(na)-len(nb) < 0 || len(na)-len(nb) > 1 {
		t.Fatalf("not one moment: a has %d, b has %d (of %d written)", len(na), len(nb), pairs.Load())
	}
	if names, _ := e.names(info.Path + "/bulk"); len(names) != 1500 {
		t.Fatalf("bulk: %d entries", len(names))
	}
	if _, found, _ := getFreeze(db); found {
		t.Fatal("the namespace is still frozen")
	}
	mustFsck(t, e.db)
	t.Logf("%d batches; the writer made %d pairs, %d before the moment", info.Batches, pairs.Load(), len(na))
	if err := e.ns.DeleteSnapshot(ctx, NewRequestID(), info.Top, "big"); err != nil {
		t.Fatal(err)
	}
	drainGC(t, e.ns)
	mustFsck(t, e.db)
}

func getFreeze(db *kv.DB) (freezeRecord, bool, error) {
	var f freezeRecord
	var found bool
	err := db.RunRead(ctx, func(tx kv.ReadTxn) error {
		v, ok, err := tx.Get(ctx, keyFreeze)
		found = ok
		if ok {
			return decode(v, &f)
		}
		return err
	})
	return f, found, err
}

// A snapshot whose metad dies between batches leaves its freeze and an
// unfinished snapshot, as a crash would (made here by running its first
// batch and stopping): changes wait until the freeze's time, then go on;
// the list shows the snapshot unfinished; deleting it, then GC, leaves the
// live tree intact and fsck clean.
func TestSnapshotLeftByADeadMetad(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	snapTree(t, e)
	run, _ := e.stat("/data/run")
	data, _ := e.stat("/data")
	freeze := freezeRecord{Snapshot: "dead", Until: e.ns.now() + (400 * time.Millisecond).Nanoseconds()}
	if err := e.ns.runUpdate(ctx, true, func(o *op) error {
		o.tx.Set(keyFreeze, encode(&freeze))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.ns.runUpdate(ctx, true, func(o *op) error {
		o.snapshotting = true
		st, _, err := o.snapshotPrologue(SnapshotRequest{ReqID: NewRequestID(), Dir: run.ID, Name: "dead"})
		if err != nil {
			return err
		}
		if _, err := o.copySome(st, 3, time.Now().Add(time.Second)); err != nil { // the first few entries, then the "crash"
			return err
		}
		st.info.Batches, st.info.Building = 1, true
		o.tx.Set(snapshotKey(st.info.Top, "dead"), encode(&st.info))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := e.mkdir("/data/run/after"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("a change during the freeze went through after %v", waited)
	}
	list, err := e.ns.ListSnapshots(ctx)
	if err != nil || len(list) != 1 || !list[0].Building {
		t.Fatalf("list: %+v %v", list, err)
	}
	mustFsck(t, e.db)
	// A new snapshot works once the dead one's freeze is past.
	if _, err := e.ns.Snapshot(ctx, SnapshotRequest{Dir: run.ID, Name: "next"}); err != nil {
		t.Fatal(err)
	}
	if err := e.ns.DeleteSnapshot(ctx, NewRequestID(), data.ID, "dead"); err != nil {
		t.Fatal(err)
	}
	drainGC(t, e.ns)
	mustFsck(t, e.db)
	if got := listing(t, e, "/data/run"); !strings.Contains(got, "/a file 640 5 3145728") || !strings.Contains(got, "/after dir") {
		t.Fatalf("live tree:\n%s", got)
	}
}

// The client of a snapshot whose metad died retries the same request on
// another metad: it takes over its own freeze at once (no waiting out the
// dead one's minute), drops the unfinished copy and makes the snapshot, in
// one transaction or in batches.
func TestSnapshotRetriedAfterItsMetadDied(t *testing.T) {
	for _, bound := range []int{0, 150_000} { // one transaction; batches
		t.Run(fmt.Sprintf("txn-bound-%d", bound), func(t *testing.T) {
			db := memkv.Open(kv.Options{MaxTxnBytes: bound})
			t.Cleanup(func() { db.Close() })
			n, err := New(db, testOpts())
			if err != nil {
				t.Fatal(err)
			}
			e := &tenv{t: t, db: db, ns: n, ids: map[string]uint64{}, reqs: map[string]RequestID{}, sess: map[string]Session{}}
			for _, d := range []string{"/data", "/data/run"} {
				if _, err := e.mkdir(d); err != nil {
					t.Fatal(err)
				}
			}
			run, _ := e.stat("/data/run")
			for i := 0; i < 1200; i++ {
				if _, err := e.ns.Create(ctx, CreateRequest{Parent: run.ID, Name: fmt.Sprintf("f%04d", i), Mode: 0o644}); err != nil {
					t.Fatal(err)
				}
			}
			req := NewRequestID()
			// What the dead metad left: its freeze (a minute to go) and its
			// first batch.
			dead := freezeRecord{Snapshot: "s", Until: e.ns.now() + time.Minute.Nanoseconds(), Req: req}
			if err := e.ns.runUpdate(ctx, true, func(o *op) error {
				o.snapshotting = true
				o.tx.Set(keyFreeze, encode(&dead))
				st, _, err := o.snapshotPrologue(SnapshotRequest{ReqID: req, Dir: run.ID, Name: "s"})
				if err != nil {
					return err
				}
				if _, err := o.copySome(st, 100, time.Now().Add(time.Second)); err != nil {
					return err
				}
				st.info.Batches, st.info.Building = 1, true
				o.tx.Set(snapshotKey(st.info.Top, "s"), encode(&st.info))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			info, err := e.ns.Snapshot(ctx, SnapshotRequest{ReqID: req, Dir: run.ID, Name: "s"})
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Fatalf("the retry waited %v", took)
			}
			if info.Building || info.Files != 1200 {
				t.Fatalf("retried snapshot: %+v", info)
			}
			if names, _ := e.names(info.Path); len(names) != 1200 {
				t.Fatalf("%d entries in the snapshot", len(names))
			}
			if _, found, _ := getFreeze(db); found {
				t.Fatal("still frozen")
			}
			if _, err := e.mkdir("/data/run/after"); err != nil {
				t.Fatal(err)
			}
			drainGC(t, e.ns)
			mustFsck(t, e.db)
		})
	}
}
