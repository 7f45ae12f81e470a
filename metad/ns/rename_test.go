package ns

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/flyfs/flyfs/core/kv"
)

// TestRenameIntoOwnSubtreeRefused checks the loop check at several depths.
func TestRenameIntoOwnSubtreeRefused(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	if _, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/a/b/c/d/e"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		from, to string
		want     Errno
	}{
		{"/a", "/a/b/c/d/e/x", ErrInvalid},
		{"/a", "/a/x", ErrInvalid},
		{"/a/b", "/a/b/c/x", ErrInvalid},
		{"/a/b/c", "/a/b/c/d/e/x", ErrInvalid},
		{"/a/b/c/d/e", "/a/x", 0}, // moving up is fine
		{"/a/b/c/d", "/a/x/d", 0}, // into a sibling subtree
		{"/a/x", "/a/x/d/x", ErrInvalid},
		{"/a/x", "/a/b/c/x", 0},
	}
	for _, tc := range tests {
		if err := wantErrno(e.rename(tc.from, tc.to, 0), tc.want); err != nil {
			t.Fatalf("rename %s -> %s: %v", tc.from, tc.to, err)
		}
		mustFsck(t, e.db)
	}
}

// TestOppositeDirectoryMovesRace races mv /p /q/.../p against mv /q /p/.../q
// on two Namespaces, at several depths, with and without faults. Exactly one
// may win (the loser sees EINVAL), and fsck must never find a cycle or an
// unreachable directory.
func TestOppositeDirectoryMovesRace(t *testing.T) {
	for _, faults := range []*kv.Faults{nil, {ReadRate: 0.02, CommitRate: 0.2, Seed: 11}} {
		e := newEnv(t, faults, testOpts())
		n1, n2 := e.ns, e.another(testOpts())
		for round := range 40 {
			depth := 1 + round%4
			p := fmt.Sprintf("/p%d", round)
			q := fmt.Sprintf("/q%d", round)
			deep := func(top string) string { return top + strings.Repeat("/s", depth-1) }
			for _, top := range []string{p, q} {
				if _, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: deep(top)}); err != nil {
					t.Fatal(err)
				}
			}
			pDeep, _ := e.ino(deep(p))
			qDeep, _ := e.ino(deep(q))
			var errs [2]error
			var wg sync.WaitGroup
			start := make(chan struct{})
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				errs[0] = n1.Rename(ctx, RenameRequest{SrcParent: RootID, SrcName: p[1:], DstParent: qDeep, DstName: "p"})
			}()
			go func() {
				defer wg.Done()
				<-start
				errs[1] = n2.Rename(ctx, RenameRequest{SrcParent: RootID, SrcName: q[1:], DstParent: pDeep, DstName: "q"})
			}()
			close(start)
			wg.Wait()
			a, b := errnoOf(errs[0]), errnoOf(errs[1])
			if !(a == 0 && b == ErrInvalid || a == ErrInvalid && b == 0) {
				t.Fatalf("round %d: outcomes %v / %v", round, errs[0], errs[1])
			}
		}
		mustFsck(t, e.db)
	}
}
