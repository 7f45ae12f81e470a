package ns

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
)

var ctx = context.Background()

// tenv is a namespace under test with path-based helpers.
type tenv struct {
	t    testing.TB
	db   *kv.DB
	ns   *Namespace
	ids  map[string]uint64    // remembered between steps
	reqs map[string]RequestID // request ids reused by "retries"
	sess map[string]Session
}

// testOpts: no GC grace (tests drain the queue at once), small GC batches (so
// fault-injected runs, which fail ~2% of reads, still commit big steps).
func testOpts() Options { return Options{GCGrace: -1, GCExpandBatch: 16} }

func newEnv(t testing.TB, faults *kv.Faults, opts Options) *tenv {
	t.Helper()
	db := memkv.Open(kv.Options{Faults: faults})
	t.Cleanup(func() { db.Close() })
	n, err := New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &tenv{t: t, db: db, ns: n, ids: map[string]uint64{}, reqs: map[string]RequestID{}, sess: map[string]Session{}}
}

// another returns a second Namespace on the same store (another metad).
func (e *tenv) another(opts Options) *Namespace {
	n, err := New(e.db, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *tenv) req(name string) RequestID {
	r, ok := e.reqs[name]
	if !ok {
		r = NewRequestID()
		e.reqs[name] = r
	}
	return r
}

func (e *tenv) ino(path string) (uint64, error) {
	in, err := e.ns.Resolve(ctx, path, false)
	return in.ID, err
}

func (e *tenv) stat(path string) (Inode, error) { return e.ns.Resolve(ctx, path, false) }

func (e *tenv) pn(path string) (uint64, string, error) {
	p, name, err := e.ns.ResolveParent(ctx, path)
	return p.ID, name, err
}

func (e *tenv) create(path string, excl bool) (CreateResult, error) {
	p, name, err := e.pn(path)
	if err != nil {
		return CreateResult{}, err
	}
	return e.ns.Create(ctx, CreateRequest{Parent: p, Name: name, Mode: 0o644, Exclusive: excl})
}

func (e *tenv) mkdir(path string) (Inode, error) {
	p, name, err := e.pn(path)
	if err != nil {
		return Inode{}, err
	}
	return e.ns.Mkdir(ctx, MkdirRequest{Parent: p, Name: name, Mode: 0o755})
}

func (e *tenv) symlink(path, target string) (Inode, error) {
	p, name, err := e.pn(path)
	if err != nil {
		return Inode{}, err
	}
	return e.ns.Symlink(ctx, SymlinkRequest{Parent: p, Name: name, Target: target})
}

func (e *tenv) link(old, path string) (Inode, error) {
	ino, err := e.ino(old)
	if err != nil {
		return Inode{}, err
	}
	p, name, err := e.pn(path)
	if err != nil {
		return Inode{}, err
	}
	return e.ns.Link(ctx, LinkRequest{Ino: ino, NewParent: p, NewName: name})
}

func (e *tenv) unlinkReq(path string, req RequestID) error {
	p, name, err := e.pn(path)
	if err != nil {
		return err
	}
	return e.ns.Unlink(ctx, RemoveRequest{ReqID: req, Parent: p, Name: name})
}

func (e *tenv) unlink(path string) error { return e.unlinkReq(path, RequestID{}) }

func (e *tenv) rmdir(path string) error {
	p, name, err := e.pn(path)
	if err != nil {
		return err
	}
	return e.ns.Rmdir(ctx, RemoveRequest{Parent: p, Name: name})
}

func (e *tenv) removeAll(path string) error {
	p, name, err := e.pn(path)
	if err != nil {
		return err
	}
	return e.ns.RemoveAll(ctx, RemoveRequest{Parent: p, Name: name})
}

func (e *tenv) renameReq(from, to string, flags uint32, req RequestID) error {
	sp, sn, err := e.pn(from)
	if err != nil {
		return err
	}
	dp, dn, err := e.pn(to)
	if err != nil {
		return err
	}
	return e.ns.Rename(ctx, RenameRequest{ReqID: req, SrcParent: sp, SrcName: sn, DstParent: dp, DstName: dn, Flags: flags})
}

func (e *tenv) rename(from, to string, flags uint32) error {
	return e.renameReq(from, to, flags, RequestID{})
}

// names lists a directory completely.
func (e *tenv) names(path string) ([]string, error) {
	ino, err := e.ino(path)
	if err != nil {
		return nil, err
	}
	return listAll(e.ns, ino, 3)
}

func listAll(n *Namespace, dir uint64, page int) ([]string, error) {
	var out []string
	after := ""
	for {
		ents, more, err := n.ReadDir(ctx, dir, after, page)
		if err != nil {
			return nil, err
		}
		for _, d := range ents {
			out = append(out, d.Name)
		}
		if !more {
			return out, nil
		}
		after = ents[len(ents)-1].Name
	}
}

// errNotErrno stands for a failure that is not a namespace errno.
const errNotErrno Errno = 1 << 16

// errnoOf maps a result to its errno: 0 for success.
func errnoOf(err error) Errno {
	if err == nil {
		return 0
	}
	if e, ok := AsErrno(err); ok {
		return e
	}
	return errNotErrno
}

func wantErrno(err error, want Errno) error {
	if got := errnoOf(err); got != want {
		return fmt.Errorf("got %v (errno %d), want errno %d (%v)", err, got, want, error(want))
	}
	return nil
}

func mustFsck(t testing.TB, db *kv.DB) Report {
	t.Helper()
	r, err := Check(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() {
		t.Fatalf("fsck: %s", r.String())
	}
	return r
}

// dumpTree renders the namespace from the root by path (not by inode id,
// which differs between runs): type, nlink, mode, length, symlink target,
// xattrs, and which paths share an inode.
func dumpTree(t testing.TB, n *Namespace) string {
	t.Helper()
	var lines []string
	first := map[uint64]string{}
	var walk func(dir uint64, path string)
	walk = func(dir uint64, path string) {
		names, err := listAll(n, dir, 50)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			p := path + "/" + name
			in, err := n.Lookup(ctx, dir, name)
			if err != nil {
				t.Fatal(err)
			}
			xs, err := n.ListXattr(ctx, in.ID)
			if err != nil {
				t.Fatal(err)
			}
			same := ""
			if f, ok := first[in.ID]; ok {
				same = " same-as " + f
			} else {
				first[in.ID] = p
			}
			lines = append(lines, fmt.Sprintf("%s %s nlink=%d mode=%o len=%d tv=%d target=%q xattrs=%v%s",
				p, in.Type, in.Nlink, in.Mode, in.Length, in.TruncateVer, in.Target, xs, same))
			if in.Type == TypeDir {
				walk(in.ID, p)
			}
		}
	}
	walk(RootID, "")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// drainGC runs GC until the queue is empty and returns the reclaimed files.
func drainGC(t testing.TB, n *Namespace) []Removed {
	t.Helper()
	var out []Removed
	for i := 0; ; i++ {
		got, err := n.GCBatch(ctx, 64)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.GCDone(ctx, got); err != nil {
			t.Fatal(err)
		}
		out = append(out, got...)
		if len(got) > 0 {
			continue
		}
		l, err := n.GCQueueLength(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if l == 0 {
			return out
		}
		if i > 100000 {
			t.Fatalf("GC queue does not drain: %d left", l)
		}
	}
}

var errCheck = errors.New("check failed")

func check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf("%w: %s", errCheck, fmt.Sprintf(format, args...))
}

// view2inode reads an inode as stored (without the directory time merge).
func (n *Namespace) view2inode(ino uint64) (*Inode, error) {
	var in *Inode
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		var err error
		in, err = getInode(ctx, tx, ino, true)
		return err
	})
	return in, err
}
