package ns

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/flyfs/flyfs/core/kv"
)

// TestCreatesInOneDirectoryDoNotConflict: 16 creators on three Namespaces
// (three metad) in one directory. Creates never write the parent inode, so
// they commit with (almost) no retries.
func TestCreatesInOneDirectoryDoNotConflict(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	nss := []*Namespace{e.ns, e.another(testOpts()), e.another(testOpts())}
	dir, err := e.mkdir("/d")
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 16, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := nss[w%len(nss)]
			for i := range each {
				if _, err := n.Create(ctx, CreateRequest{Parent: dir.ID, Name: fmt.Sprintf("f-%02d-%03d", w, i), Exclusive: true}); err != nil {
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
	var retries, ops int64
	for _, n := range nss {
		r, o := n.Retries()
		retries, ops = retries+r, ops+o
	}
	names, err := listAll(e.ns, dir.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != workers*each {
		t.Fatalf("%d entries, want %d", len(names), workers*each)
	}
	t.Logf("%d creates, %d retries", ops, retries)
	if retries > ops/50 {
		t.Fatalf("%d retries for %d creates: creates in one directory conflict", retries, ops)
	}
	mustFsck(t, e.db)
}

// outcome is one operation's result in the model test.
type outcome struct {
	err error
}

// TestConcurrentModel runs racing operations on three Namespaces over one
// store, in rounds where every worker starts its operation at once. The
// workload is built so each race has few legal outcomes, and the outcomes
// decide the model: rmdir vs create in that directory, link vs unlink of the
// only name, two unlinks of one name, two renames of one directory, two
// exclusive creates of one name, unique creates in one directory, and files
// moved across two directories in both directions. After the run the tree
// must equal the model's, nlink must match, and fsck must be clean.
func TestConcurrentModel(t *testing.T) {
	t.Run("clean", func(t *testing.T) { runModel(t, nil, 40) })
	t.Run("faults", func(t *testing.T) {
		runModel(t, &kv.Faults{ReadRate: 0.02, CommitRate: 0.2, Seed: 7}, 24)
	})
}

func runModel(t *testing.T, faults *kv.Faults, rounds int) {
	e := newEnv(t, faults, testOpts())
	nss := []*Namespace{e.ns, e.another(testOpts()), e.another(testOpts())}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"/shared", "/A", "/B"} {
		_, err := e.mkdir(d)
		must(err)
	}
	rIno := make([]uint64, rounds) // directories rmdir races a create in
	lIno := make([]uint64, rounds) // files whose only name races a link
	for r := range rounds {
		d, err := e.mkdir(fmt.Sprintf("/R-%d", r))
		must(err)
		rIno[r] = d.ID
		c, err := e.create(fmt.Sprintf("/L-%d", r), true)
		must(err)
		lIno[r] = c.Inode.ID
		_, err = e.create(fmt.Sprintf("/U-%d", r), true)
		must(err)
		_, err = e.mkdir(fmt.Sprintf("/A/dm-%d", r))
		must(err)
		_, err = e.create(fmt.Sprintf("/A/dm-%d/inner", r), true)
		must(err)
	}
	// Movers: worker 10's files start in /A, worker 11's in /B.
	const movers = 3
	for i := range movers {
		_, err := e.create(fmt.Sprintf("/A/mv-10-%d", i), true)
		must(err)
		_, err = e.create(fmt.Sprintf("/B/mv-11-%d", i), true)
		must(err)
	}
	ids := func(path string) uint64 {
		ino, err := e.ino(path)
		must(err)
		return ino
	}
	shared, A, B, root := ids("/shared"), ids("/A"), ids("/B"), RootID

	const workers = 12
	res := make([][]outcome, workers)
	for w := range res {
		res[w] = make([]outcome, rounds)
	}
	var uniq [2][]error // workers 8 and 9 also create a name of their own
	uniq[0], uniq[1] = make([]error, rounds), make([]error, rounds)
	for r := range rounds {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := nss[w%len(nss)]
				<-start
				var err error
				switch w {
				case 0:
					err = n.Rmdir(ctx, RemoveRequest{Parent: root, Name: fmt.Sprintf("R-%d", r)})
				case 1:
					_, err = n.Create(ctx, CreateRequest{Parent: rIno[r], Name: "f", Exclusive: true})
				case 2:
					_, err = n.Link(ctx, LinkRequest{Ino: lIno[r], NewParent: root, NewName: fmt.Sprintf("Lx-%d", r)})
				case 3:
					err = n.Unlink(ctx, RemoveRequest{Parent: root, Name: fmt.Sprintf("L-%d", r)})
				case 4, 5:
					err = n.Unlink(ctx, RemoveRequest{Parent: root, Name: fmt.Sprintf("U-%d", r)})
				case 6, 7:
					dst := fmt.Sprintf("dm-%d", r)
					if w == 7 {
						dst += "-alt"
					}
					err = n.Rename(ctx, RenameRequest{SrcParent: A, SrcName: fmt.Sprintf("dm-%d", r), DstParent: B, DstName: dst})
				case 8, 9:
					_, err = n.Create(ctx, CreateRequest{Parent: shared, Name: fmt.Sprintf("c-%d", r), Exclusive: true})
					_, uniq[w-8][r] = n.Create(ctx, CreateRequest{Parent: shared, Name: fmt.Sprintf("u-%d-%d", w, r), Exclusive: true})
				case 10, 11:
					// Round r moves every file from one directory to the
					// other; 10 and 11 go in opposite directions.
					from, to := A, B
					if (r%2 == 1) != (w == 11) {
						from, to = B, A
					}
					for i := range movers {
						name := fmt.Sprintf("mv-%d-%d", w, i)
						if err = n.Rename(ctx, RenameRequest{SrcParent: from, SrcName: name, DstParent: to, DstName: name}); err != nil {
							break
						}
					}
				}
				res[w][r] = outcome{err}
			}()
		}
		close(start)
		wg.Wait()
	}

	// Decide the model from the outcomes.
	want := map[string]InodeType{"/shared": TypeDir, "/A": TypeDir, "/B": TypeDir}
	errIs := func(w, r int, target Errno) bool { return errnoOf(res[w][r].err) == target }
	for r := range rounds {
		bad := func(what string) {
			t.Helper()
			var parts []string
			for w := range workers {
				parts = append(parts, fmt.Sprintf("w%d=%v", w, res[w][r].err))
			}
			t.Fatalf("round %d: illegal outcome of %s: %s", r, what, strings.Join(parts, " "))
		}
		switch {
		case errIs(0, r, 0) && errIs(1, r, ErrNotExist):
		case errIs(0, r, ErrNotEmpty) && errIs(1, r, 0):
			want[fmt.Sprintf("/R-%d", r)] = TypeDir
			want[fmt.Sprintf("/R-%d/f", r)] = TypeFile
		default:
			bad("rmdir vs create")
		}
		switch {
		case errIs(3, r, 0) && errIs(2, r, 0):
			want[fmt.Sprintf("/Lx-%d", r)] = TypeFile
		case errIs(3, r, 0) && errIs(2, r, ErrNotExist):
		default:
			bad("link vs unlink")
		}
		if !(errIs(4, r, 0) && errIs(5, r, ErrNotExist) || errIs(4, r, ErrNotExist) && errIs(5, r, 0)) {
			bad("unlink vs unlink")
		}
		switch {
		case errIs(6, r, 0) && errIs(7, r, ErrNotExist):
			want[fmt.Sprintf("/B/dm-%d", r)] = TypeDir
			want[fmt.Sprintf("/B/dm-%d/inner", r)] = TypeFile
		case errIs(6, r, ErrNotExist) && errIs(7, r, 0):
			want[fmt.Sprintf("/B/dm-%d-alt", r)] = TypeDir
			want[fmt.Sprintf("/B/dm-%d-alt/inner", r)] = TypeFile
		default:
			bad("rename vs rename")
		}
		if !(errIs(8, r, 0) && errIs(9, r, ErrExist) || errIs(8, r, ErrExist) && errIs(9, r, 0)) {
			bad("exclusive create vs exclusive create")
		}
		if uniq[0][r] != nil || uniq[1][r] != nil {
			t.Fatalf("round %d: unique creates: %v %v", r, uniq[0][r], uniq[1][r])
		}
		want[fmt.Sprintf("/shared/c-%d", r)] = TypeFile
		want[fmt.Sprintf("/shared/u-8-%d", r)] = TypeFile
		want[fmt.Sprintf("/shared/u-9-%d", r)] = TypeFile
		if !errIs(10, r, 0) || !errIs(11, r, 0) {
			bad("moves")
		}
	}
	// Movers: after `rounds` rounds, worker 10's files are in /B iff rounds is odd.
	for i := range movers {
		d10, d11 := "/A", "/B"
		if rounds%2 == 1 {
			d10, d11 = "/B", "/A"
		}
		want[fmt.Sprintf("%s/mv-10-%d", d10, i)] = TypeFile
		want[fmt.Sprintf("%s/mv-11-%d", d11, i)] = TypeFile
	}
	got := map[string]InodeType{}
	var walk func(dir uint64, path string)
	walk = func(dir uint64, path string) {
		names, err := listAll(e.ns, dir, 64)
		must(err)
		for _, name := range names {
			in, err := e.ns.Lookup(ctx, dir, name)
			must(err)
			got[path+"/"+name] = in.Type
			if in.Type == TypeFile && in.Nlink != 1 {
				t.Fatalf("%s/%s: nlink %d", path, name, in.Nlink)
			}
			if in.Type == TypeDir {
				walk(in.ID, path+"/"+name)
			}
		}
	}
	walk(RootID, "")
	if d := diffTrees(want, got); d != "" {
		t.Fatalf("tree differs from the model:\n%s", d)
	}
	// Linked-then-unlinked files that lost the race are removed (nlink 0).
	for r := range rounds {
		if _, ok := want[fmt.Sprintf("/Lx-%d", r)]; ok {
			continue
		}
		in, err := e.ns.Stat(ctx, lIno[r])
		if err == nil && in.Nlink != 0 {
			t.Fatalf("round %d: unlinked file has nlink %d", r, in.Nlink)
		}
	}
	var retries, ops int64
	for _, n := range nss {
		r, o := n.Retries()
		retries, ops = retries+r, ops+o
	}
	rmdirWon, linkWon := 0, 0
	for r := range rounds {
		if errIs(0, r, 0) {
			rmdirWon++
		}
		if errIs(2, r, 0) {
			linkWon++
		}
	}
	t.Logf("%d rounds: rmdir won %d, link won %d; %d transactions, %d retries", rounds, rmdirWon, linkWon, ops, retries)
	mustFsck(t, e.db)
	drainGC(t, e.ns)
	mustFsck(t, e.db)
	if faults != nil {
		t.Logf("faults: %+v", e.db.FaultCounts())
	}
}

func diffTrees(want, got map[string]InodeType) string {
	var out []string
	for p, ty := range want {
		if g, ok := got[p]; !ok {
			out = append(out, "missing "+p)
		} else if g != ty {
			out = append(out, fmt.Sprintf("%s: %s, want %s", p, g, ty))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			out = append(out, "unexpected "+p)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestAllocatorUniqueAcrossNamespaces: ids from several allocators on one
// store never collide, also when claims commit but report maybe-committed.
func TestAllocatorUniqueAcrossNamespaces(t *testing.T) {
	for _, faults := range []*kv.Faults{nil, {CommitRate: 0.3, Seed: 3}} {
		e := newEnv(t, faults, testOpts())
		allocs := []*allocator{newAllocator(e.db), newAllocator(e.db), newAllocator(e.db)}
		var mu sync.Mutex
		seen := map[uint64]bool{}
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 1500 {
					id, err := allocs[w%3].id(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if seen[id] || id <= RootID {
						t.Errorf("id %d handed out twice (or reserved)", id)
					}
					seen[id] = true
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
}
