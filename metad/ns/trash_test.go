package ns

import (
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/kv"
)

func newTrashEnv(t *testing.T, days int) (*tenv, *time.Time) {
	t.Helper()
	now := time.Date(2026, 12, 1, 12, 30, 0, 0, time.UTC)
	opts := testOpts()
	opts.TrashDays = days
	opts.Now = func() time.Time { return now }
	return newEnv(t, nil, opts), &now
}

// TestTrash: with a trash, unlinks, renames over a file and trees removed
// whole keep what they remove under /.flyfs-trash with where it was;
// restore puts it back; removals inside the trash are for good; the
// hours past the days are purged and collected; fsck is clean throughout.
func TestTrash(t *testing.T) {
	e, now := newTrashEnv(t, 2)
	for _, d := range []string{"/data/run", "/data/keep"} {
		if _, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: d, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := e.create("/data/run/ckpt", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.create("/data/run/sub", true); err != nil {
		t.Fatal(err)
	}
	if err := e.unlink("/data/run/ckpt"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.stat("/data/run/ckpt"); wantErrno(err, ErrNotExist) != nil {
		t.Fatalf("the unlinked name: %v", err)
	}
	list, err := e.ns.ListTrash(ctx)
	if err != nil || len(list) != 1 || list[0].Ino != f.Inode.ID || list[0].Path != "/data/run/ckpt" || list[0].Type != TypeFile {
		t.Fatalf("trash after an unlink: %+v %v", list, err)
	}
	if in, err := e.stat(list[0].Trash); err != nil || in.ID != f.Inode.ID {
		t.Fatalf("the entry %s: %+v %v", list[0].Trash, in, err)
	}
	if gone := drainGC(t, e.ns); len(gone) != 0 {
		t.Fatalf("collected from the trash: %+v", gone)
	}
	mustFsck(t, e.db)

	// A tree removed whole.
	if err := e.removeAll("/data/run"); err != nil {
		t.Fatal(err)
	}
	list, _ = e.ns.ListTrash(ctx)
	tree := entryOf(list, "/data/run")
	if len(list) != 2 || tree.Type != TypeDir {
		t.Fatalf("trash after remove -r: %+v", list)
	}
	mustFsck(t, e.db)
	// Restoring the file first fails: its directory is in the trash too.
	if _, err := e.ns.RestoreTrash(ctx, RequestID{}, f.Inode.ID, 0, ""); wantErrno(err, ErrNotExist) != nil {
		t.Fatalf("restore into a trashed directory: %v", err)
	}
	if where, err := e.ns.RestoreTrash(ctx, RequestID{}, tree.Ino, 0, ""); err != nil || where != "/data/run" {
		t.Fatalf("restore the tree: %q %v", where, err)
	}
	if where, err := e.ns.RestoreTrash(ctx, RequestID{}, f.Inode.ID, 0, ""); err != nil || where != "/data/run/ckpt" {
		t.Fatalf("restore the file: %q %v", where, err)
	}
	if in, err := e.stat("/data/run/ckpt"); err != nil || in.ID != f.Inode.ID {
		t.Fatalf("the restored file: %+v %v", in, err)
	}
	if _, err := e.stat("/data/run/sub"); err != nil {
		t.Fatalf("the restored tree's file: %v", err)
	}
	mustFsck(t, e.db)

	// A rename over a file keeps the one replaced; a taken name refuses a
	// restore, which then goes elsewhere.
	if _, err := e.create("/data/keep/new", true); err != nil {
		t.Fatal(err)
	}
	old, _ := e.stat("/data/run/ckpt")
	if err := e.rename("/data/keep/new", "/data/run/ckpt", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ns.RestoreTrash(ctx, RequestID{}, old.ID, 0, ""); wantErrno(err, ErrExist) != nil {
		t.Fatalf("restore over a taken name: %v", err)
	}
	keep, _ := e.ino("/data/keep")
	if where, err := e.ns.RestoreTrash(ctx, RequestID{}, old.ID, keep, "ckpt.old"); err != nil || where != "ckpt.old" {
		t.Fatalf("restore elsewhere: %q %v", where, err)
	}
	mustFsck(t, e.db)

	// Removals inside the trash are for good.
	if err := e.unlink("/data/keep/ckpt.old"); err != nil {
		t.Fatal(err)
	}
	list, _ = e.ns.ListTrash(ctx)
	if err := e.unlink(entryOf(list, "/data/keep/ckpt.old").Trash); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(time.Second) // queued now: due after it
	if gone := drainGC(t, e.ns); len(gone) != 1 || gone[0].Ino != old.ID {
		t.Fatalf("an unlink in the trash collected %+v, want inode %d", gone, old.ID)
	}
	mustFsck(t, e.db)

	// rm -r one by one: the directory went for good; the restore makes it
	// again along the path.
	if _, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/data/gone/deep", Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	lone, err := e.create("/data/gone/deep/f", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.unlink("/data/gone/deep/f"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/data/gone/deep", "/data/gone"} {
		if err := e.rmdir(d); err != nil {
			t.Fatal(err)
		}
	}
	if where, err := e.ns.RestoreTrash(ctx, RequestID{}, lone.Inode.ID, 0, ""); err != nil || where != "/data/gone/deep/f" {
		t.Fatalf("restore into a directory that went: %q %v", where, err)
	}
	if in, err := e.stat("/data/gone/deep/f"); err != nil || in.ID != lone.Inode.ID {
		t.Fatalf("the file restored along its path: %+v %v", in, err)
	}
	mustFsck(t, e.db)

	// Purge: an hour goes once all of it is older than the days.
	if err := e.unlink("/data/run/sub"); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(47 * time.Hour)
	if n, err := e.ns.PurgeTrash(ctx, *now); err != nil || n != 0 {
		t.Fatalf("purge at 47 h: %d %v", n, err)
	}
	*now = now.Add(2 * time.Hour)
	if n, err := e.ns.PurgeTrash(ctx, *now); err != nil || n != 1 {
		t.Fatalf("purge at 49 h: %d %v", n, err)
	}
	if list, _ := e.ns.ListTrash(ctx); len(list) != 0 {
		t.Fatalf("trash after the purge: %+v", list)
	}
	*now = now.Add(time.Second)
	if gone := drainGC(t, e.ns); len(gone) != 1 {
		t.Fatalf("collected after the purge: %+v", gone)
	}
	mustFsck(t, e.db)
}

// TestEmptyTrash: emptying removes every entry now, whatever its age.
func TestEmptyTrash(t *testing.T) {
	e, now := newTrashEnv(t, 30)
	if _, err := e.create("/f", true); err != nil {
		t.Fatal(err)
	}
	if err := e.unlink("/f"); err != nil {
		t.Fatal(err)
	}
	if n, err := e.ns.EmptyTrash(ctx); err != nil || n != 1 {
		t.Fatalf("empty: %d %v", n, err)
	}
	if l, _ := e.ns.ListTrash(ctx); len(l) != 0 {
		t.Fatalf("after emptying: %+v", l)
	}
	*now = now.Add(time.Second)
	if gone := drainGC(t, e.ns); len(gone) != 1 {
		t.Fatalf("collected after emptying: %+v", gone)
	}
	mustFsck(t, e.db)
}

// TestTrashSkips: no trash, a versioned bucket and the root's /.flyfs*
// directories remove for good (or keep by versions) as without a trash.
func TestTrashSkips(t *testing.T) {
	off, _ := newTrashEnv(t, 0)
	if _, err := off.create("/f", true); err != nil {
		t.Fatal(err)
	}
	if err := off.unlink("/f"); err != nil {
		t.Fatal(err)
	}
	if l, _ := off.ns.ListTrash(ctx); len(l) != 0 {
		t.Fatalf("trash off: %+v", l)
	}
	e, _ := newTrashEnv(t, 1)
	for _, d := range []string{"/.flyfs-s3/staging", "/vb"} {
		if _, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: d, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	vb, _ := e.ino("/vb")
	if err := e.ns.SetVersioning(ctx, vb, VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/.flyfs-s3/staging/part", "/vb/obj"} {
		if _, err := e.create(p, true); err != nil {
			t.Fatal(err)
		}
		if err := e.unlink(p); err != nil {
			t.Fatal(err)
		}
	}
	if l, _ := e.ns.ListTrash(ctx); len(l) != 0 {
		t.Fatalf("trash of the staging area or a versioned bucket: %+v", l)
	}
	mustFsck(t, e.db)
}

func entryOf(list []TrashEntry, path string) TrashEntry {
	for _, e := range list {
		if e.Path == path {
			return e
		}
	}
	return TrashEntry{}
}

// TestTrashUnderFaults: unlinks, a tree removed whole and restores, on a
// store that fails reads and commits (some after committing): each entry
// is in the trash once, restores happen once, fsck is clean.
func TestTrashUnderFaults(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		opts := testOpts()
		opts.TrashDays = 1
		e := newEnv(t, &kv.Faults{ReadRate: 0.02, CommitRate: 0.2, Seed: seed}, opts)
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		_, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/d/sub", Mode: 0o755})
		must(err)
		for _, p := range []string{"/d/a", "/d/b", "/d/sub/c"} {
			_, err := e.create(p, true)
			must(err)
		}
		must(e.unlink("/d/a"))
		must(e.removeAll("/d/sub"))
		list, err := e.ns.ListTrash(ctx)
		must(err)
		if len(list) != 2 || entryOf(list, "/d/a").Ino == 0 || entryOf(list, "/d/sub").Type != TypeDir {
			t.Fatalf("seed %d: trash %+v", seed, list)
		}
		req := NewRequestID()
		where, err := e.ns.RestoreTrash(ctx, req, entryOf(list, "/d/sub").Ino, 0, "")
		must(err)
		again, err := e.ns.RestoreTrash(ctx, req, entryOf(list, "/d/sub").Ino, 0, "")
		if err != nil || again != where || where != "/d/sub" {
			t.Fatalf("seed %d: restore %q, retried %q %v", seed, where, again, err)
		}
		if _, err := e.stat("/d/sub/c"); err != nil {
			t.Fatalf("seed %d: the restored tree: %v", seed, err)
		}
		mustFsck(t, e.db)
	}
}
