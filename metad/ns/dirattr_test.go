package ns

import (
	"fmt"
	"sync"
	"testing"

	"github.com/flyfs/flyfs/core/kv"
)

// TestDirectoryNlink: a directory reports nlink 2 plus its subdirectories
// through every operation that adds, removes or moves one, and fsck agrees
// after each step.
func TestDirectoryNlink(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	want := func(step string, counts map[string]uint32) {
		t.Helper()
		for p, n := range counts {
			in, err := e.stat(p)
			if err != nil {
				t.Fatalf("%s: stat %s: %v", step, p, err)
			}
			if in.Nlink != n {
				t.Errorf("%s: nlink of %s is %d, want %d", step, p, in.Nlink, n)
			}
		}
		mustFsck(t, e.db)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	okIn := func(_ Inode, err error) { t.Helper(); must(err) }

	want("empty root", map[string]uint32{"/": 2})
	okIn(e.mkdir("/a"))
	okIn(e.mkdir("/b"))
	in, err := e.mkdir("/a/x")
	must(err)
	if in.Nlink != 2 {
		t.Errorf("mkdir answers nlink %d", in.Nlink)
	}
	_, err = e.create("/a/file", true)
	must(err)
	okIn(e.symlink("/a/link", "file"))
	okIn(e.ns.Mknod(ctx, MknodRequest{Parent: e.must("/a"), Name: "fifo", Type: TypeFifo}))
	want("mkdir", map[string]uint32{"/": 4, "/a": 3, "/a/x": 2, "/b": 2})

	all, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/b/p/q/r", Mode: 0o755})
	must(err)
	if all.Nlink != 2 {
		t.Errorf("MkdirAll answers nlink %d", all.Nlink)
	}
	again, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/b/p", Mode: 0o755})
	must(err)
	if again.Nlink != 3 {
		t.Errorf("MkdirAll of an existing directory answers nlink %d", again.Nlink)
	}
	want("mkdir -p", map[string]uint32{"/b": 3, "/b/p": 3, "/b/p/q": 3, "/b/p/q/r": 2})

	must(e.rename("/a/x", "/b/x", 0))
	want("move across", map[string]uint32{"/a": 2, "/b": 4})
	must(e.rename("/b/x", "/b/x2", 0))
	must(e.rename("/a/file", "/b/file", 0))
	want("moves that change no count", map[string]uint32{"/a": 2, "/b": 4})

	okIn(e.mkdir("/a/empty"))
	must(e.rename("/b/x2", "/a/empty", 0))
	want("a directory over an empty one", map[string]uint32{"/a": 3, "/b": 3})
	okIn(e.mkdir("/a/other"))
	must(e.rename("/a/other", "/a/empty", 0))
	want("over an empty one in the same directory", map[string]uint32{"/a": 3})

	must(e.rename("/a/empty", "/b/link2", RenameNoReplace))
	must(e.rename("/b/link2", "/a/link", RenameExchange))
	want("exchange a directory with a symlink", map[string]uint32{"/a": 3, "/b": 3})
	okIn(e.mkdir("/b/d2"))
	must(e.rename("/a/link", "/b/d2", RenameExchange))
	want("exchange two directories", map[string]uint32{"/a": 3, "/b": 4})

	must(e.rmdir("/b/d2"))
	want("rmdir", map[string]uint32{"/b": 3})
	must(e.removeAll("/b/p"))
	want("remove -r", map[string]uint32{"/b": 2})
	drainGC(t, e.ns)
	want("after GC", map[string]uint32{"/b": 2, "/": 4})

	// Implicit directories pruned by an unlink or a rename.
	imp, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/b/i/j", Mode: 0o755, Implicit: true})
	must(err)
	_, err = e.ns.Create(ctx, CreateRequest{Parent: imp.ID, Name: "obj", Mode: 0o644})
	must(err)
	want("implicit", map[string]uint32{"/b": 3, "/b/i": 3})
	must(e.ns.Unlink(ctx, RemoveRequest{Parent: imp.ID, Name: "obj", PruneImplicit: true}))
	want("pruned", map[string]uint32{"/b": 2})

	// A directory made before subdirectories were counted reports 1 and
	// fsck leaves its count alone.
	legacy, err := e.mkdir("/legacy")
	must(err)
	must(e.db.Run(ctx, func(tx kv.Txn) error {
		in, err := getInode(ctx, tx, legacy.ID, false)
		if err != nil {
			return err
		}
		in.CountsSubdirs = false
		tx.Set(inodeKey(in.ID), encode(in))
		return nil
	}))
	okIn(e.mkdir("/legacy/sub"))
	want("legacy directory", map[string]uint32{"/legacy": 1, "/legacy/sub": 2})
	must(e.rmdir("/legacy/sub"))
	must(e.rmdir("/legacy"))
	want("legacy directory removed", map[string]uint32{"/": 4})
}

// must resolves path or fails the test.
func (e *tenv) must(path string) uint64 {
	e.t.Helper()
	id, err := e.ino(path)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// TestMkdirsDoNotStallCreates: file creates in a directory never touch
// what mkdirs in it write (the subdirectory count is kept off the inode), so
// they commit without retries while mkdirs race beside them; the mkdirs
// conflict among themselves only when their ids share a count shard.
func TestMkdirsDoNotStallCreates(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	files, dirs := e.another(testOpts()), e.another(testOpts())
	d, err := e.mkdir("/d")
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers)
	for w := range workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := files.Create(ctx, CreateRequest{Parent: d.ID, Name: fmt.Sprintf("f-%d-%d", w, i), Exclusive: true}); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := dirs.Mkdir(ctx, MkdirRequest{Parent: d.ID, Name: fmt.Sprintf("d-%d-%d", w, i)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	fr, fo := files.Retries()
	dr, do := dirs.Retries()
	t.Logf("%d creates, %d retries; %d mkdirs, %d retries", fo, fr, do, dr)
	if fr > fo/50 {
		t.Errorf("%d retries for %d creates beside mkdirs", fr, fo)
	}
	if dr > do/4 {
		t.Errorf("%d retries for %d mkdirs in one directory", dr, do)
	}
	in, err := e.stat("/d")
	if err != nil || in.Nlink != 2+workers*each {
		t.Errorf("nlink %d (%v), want %d", in.Nlink, err, 2+workers*each)
	}
	mustFsck(t, e.db)
}
