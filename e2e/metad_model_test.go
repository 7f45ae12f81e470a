package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/e2e/harness"
)

// TestThreeMetadModel hammers three metad processes' worth of services (each
// worker's client bound to one of them) over one Pebble store with racing
// operations whose legal outcomes are few, decides a sequential model from
// the acknowledged outcomes, and checks that the tree equals the model, nlink
// counts are right, and fsck (through metad's RPC) is clean. The faulty run
// injects KV read and commit failures, including commits that succeed but
// report "maybe committed", so idempotent retries are exercised end to end.
func TestThreeMetadModel(t *testing.T) {
	t.Run("clean", func(t *testing.T) { runMetadModel(t, nil, 16) })
	t.Run("faults", func(t *testing.T) {
		runMetadModel(t, &kv.Faults{ReadRate: 0.01, CommitRate: 0.1, Seed: 11}, 10)
	})
}

func runMetadModel(t *testing.T, faults *kv.Faults, rounds int) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Chains: 2, NoSync: true}, Metads: 3, MetaFaults: faults})
	ctx := context.Background()
	const workers = 10
	metas := make([]*client.Meta, workers)
	for w := range metas {
		fs, err := c.DialMetad(fmt.Sprintf("w%d", w), []string{c.MetadAddrs()[w%3]})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fs.Close() })
		metas[w] = fs.Meta()
	}
	m := metas[0]
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(path string) metaapi.Inode {
		in, err := m.MkdirAll(ctx, path, 0o755, client.Creds{}, false)
		must(err)
		return in
	}
	create := func(parent uint64, name string) metaapi.Inode {
		in, _, _, err := m.Create(ctx, parent, name, 0o644, os.O_CREATE|os.O_EXCL, client.Creds{})
		must(err)
		return in
	}
	shared, A, B := mkdir("/shared"), mkdir("/A"), mkdir("/B")
	root := uint64(1)
	rdir := make([]uint64, rounds)
	for r := range rounds {
		rdir[r] = mkdir(fmt.Sprintf("/R-%d", r)).ID
		dm := mkdir(fmt.Sprintf("/A/dm-%d", r))
		create(dm.ID, "inner")
		create(root, fmt.Sprintf("U-%d", r))
	}
	const movers = 3
	for i := range movers {
		create(A.ID, fmt.Sprintf("mv-8-%d", i))
		create(B.ID, fmt.Sprintf("mv-9-%d", i))
	}

	errs := make([][]error, workers)
	for w := range errs {
		errs[w] = make([]error, rounds)
	}
	for r := range rounds {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mm := metas[w]
				<-start
				var err error
				switch w {
				case 0: // rmdir races a create inside
					err = mm.Rmdir(ctx, root, fmt.Sprintf("R-%d", r))
				case 1:
					_, _, _, err = mm.Create(ctx, rdir[r], "f", 0o644, os.O_CREATE|os.O_EXCL, client.Creds{})
				case 2, 3: // two unlinks of one name
					err = mm.Unlink(ctx, metaapi.RemoveReq{Parent: root, Name: fmt.Sprintf("U-%d", r)})
				case 4, 5: // two renames of one directory to different names
					dst := fmt.Sprintf("dm-%d", r)
					if w == 5 {
						dst += "-alt"
					}
					err = mm.Rename(ctx, metaapi.RenameReq{SrcParent: A.ID, SrcName: fmt.Sprintf("dm-%d", r), DstParent: B.ID, DstName: dst})
				case 6, 7: // exclusive creates of one name, plus a unique one each, in one directory
					_, _, _, err = mm.Create(ctx, shared.ID, fmt.Sprintf("c-%d", r), 0o644, os.O_CREATE|os.O_EXCL, client.Creds{})
					if _, _, _, e2 := mm.Create(ctx, shared.ID, fmt.Sprintf("u-%d-%d", w, r), 0o644, os.O_CREATE|os.O_EXCL, client.Creds{}); e2 != nil {
						err = fmt.Errorf("unique create: %w", e2)
					}
				case 8, 9: // files moved across two directories in opposite directions
					from, to := A.ID, B.ID
					if (r%2 == 1) != (w == 9) {
						from, to = B.ID, A.ID
					}
					for i := range movers {
						name := fmt.Sprintf("mv-%d-%d", w, i)
						if err = mm.Rename(ctx, metaapi.RenameReq{SrcParent: from, SrcName: name, DstParent: to, DstName: name}); err != nil {
							break
						}
					}
				}
				errs[w][r] = err
			}()
		}
		close(start)
		wg.Wait()
	}

	is := func(w, r int, e syscall.Errno) bool {
		if e == 0 {
			return errs[w][r] == nil
		}
		return client.Errno(errs[w][r]) == e
	}
	want := map[string]metaapi.Type{"/shared": metaapi.TypeDir, "/A": metaapi.TypeDir, "/B": metaapi.TypeDir}
	for r := range rounds {
		bad := func(what string) {
			var parts []string
			for w := range workers {
				parts = append(parts, fmt.Sprintf("w%d=%v", w, errs[w][r]))
			}
			t.Fatalf("round %d: illegal outcome of %s: %s", r, what, strings.Join(parts, " "))
		}
		switch {
		case is(0, r, 0) && is(1, r, syscall.ENOENT):
		case is(0, r, syscall.ENOTEMPTY) && is(1, r, 0):
			want[fmt.Sprintf("/R-%d", r)] = metaapi.TypeDir
			want[fmt.Sprintf("/R-%d/f", r)] = metaapi.TypeFile
		default:
			bad("rmdir vs create")
		}
		if !(is(2, r, 0) && is(3, r, syscall.ENOENT) || is(2, r, syscall.ENOENT) && is(3, r, 0)) {
			bad("unlink vs unlink")
		}
		switch {
		case is(4, r, 0) && is(5, r, syscall.ENOENT):
			want[fmt.Sprintf("/B/dm-%d", r)] = metaapi.TypeDir
			want[fmt.Sprintf("/B/dm-%d/inner", r)] = metaapi.TypeFile
		case is(4, r, syscall.ENOENT) && is(5, r, 0):
			want[fmt.Sprintf("/B/dm-%d-alt", r)] = metaapi.TypeDir
			want[fmt.Sprintf("/B/dm-%d-alt/inner", r)] = metaapi.TypeFile
		default:
			bad("rename vs rename")
		}
		if !(is(6, r, 0) && is(7, r, syscall.EEXIST) || is(6, r, syscall.EEXIST) && is(7, r, 0)) {
			bad("exclusive create vs exclusive create")
		}
		want[fmt.Sprintf("/shared/c-%d", r)] = metaapi.TypeFile
		want[fmt.Sprintf("/shared/u-6-%d", r)] = metaapi.TypeFile
		want[fmt.Sprintf("/shared/u-7-%d", r)] = metaapi.TypeFile
		if !is(8, r, 0) || !is(9, r, 0) {
			bad("moves")
		}
	}
	for i := range movers {
		d8, d9 := "/A", "/B"
		if rounds%2 == 1 {
			d8, d9 = "/B", "/A"
		}
		want[fmt.Sprintf("%s/mv-8-%d", d8, i)] = metaapi.TypeFile
		want[fmt.Sprintf("%s/mv-9-%d", d9, i)] = metaapi.TypeFile
	}

	got := map[string]metaapi.Type{}
	var walk func(dir uint64, path string)
	walk = func(dir uint64, path string) {
		after := ""
		for {
			ents, more, err := m.ReadDir(ctx, dir, after, 7, true) // small pages: paging is part of the check
			must(err)
			for _, e := range ents {
				if e.Inode == nil {
					t.Fatalf("%s/%s: entry without a live inode", path, e.Name)
				}
				got[path+"/"+e.Name] = e.Type
				if e.Type == metaapi.TypeFile && e.Inode.Nlink != 1 {
					t.Fatalf("%s/%s: nlink %d", path, e.Name, e.Inode.Nlink)
				}
				if e.Type == metaapi.TypeDir {
					walk(e.Ino, path+"/"+e.Name)
				}
				after = e.Name
			}
			if !more {
				return
			}
		}
	}
	walk(root, "")
	if d := diffModel(want, got); d != "" {
		t.Fatalf("tree differs from the model:\n%s", d)
	}
	r, err := m.Fsck(ctx)
	must(err)
	if len(r.Problems) > 0 {
		t.Fatalf("fsck: %s", r.Summary)
	}
	if faults != nil {
		t.Logf("faults injected: %+v", c.MetaKV.FaultCounts())
	}
	t.Logf("%d rounds over 3 metad: %s", rounds, r.Summary)
}

func diffModel(want, got map[string]metaapi.Type) string {
	var out []string
	for p, ty := range want {
		if g, ok := got[p]; !ok {
			out = append(out, "missing "+p)
		} else if g != ty {
			out = append(out, fmt.Sprintf("%s is type %d, want %d", p, g, ty))
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
