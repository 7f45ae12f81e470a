package metad_test

import (
	"context"
	"net"
	"syscall"
	"testing"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/metad"
	"github.com/flyfs/flyfs/metad/ns"
)

// startMetads runs n metad on one KV store and returns a client for each.
func startMetads(t *testing.T, n int, db *kv.DB) []metaapi.Client {
	t.Helper()
	rc := rpc.NewClient(rpc.Options{})
	t.Cleanup(func() { rc.Close() })
	var out []metaapi.Client
	for i := 0; i < n; i++ {
		s, err := metad.New(metad.Config{KV: db})
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve(l)
		t.Cleanup(func() { s.Close() })
		out = append(out, metaapi.Client{RPC: rc, Addr: l.Addr().String()})
	}
	return out
}

func rid(b byte) metaapi.RequestID { var r metaapi.RequestID; r[0], r[15] = b, 0x5a; return r }

// TestOverRPCWithFaults drives three metad on one KV store that injects
// faults, through the wire API: results and errnos cross the wire, and a
// retry on another metad returns the first attempt's result.
func TestOverRPCWithFaults(t *testing.T) {
	db := memkv.Open(kv.Options{Faults: &kv.Faults{ReadRate: 0.01, CommitRate: 0.2, Seed: 9}})
	m := startMetads(t, 3, db)
	ctx := context.Background()
	// Retry until an answer that is not Unavailable (the client's job).
	do := func(f func() error) error {
		for {
			err := f()
			if rpc.CodeOf(err) != rpc.Unavailable {
				return err
			}
		}
	}
	var dir *metaapi.InodeResp
	if err := do(func() (err error) {
		dir, err = m[0].Mkdir(ctx, &metaapi.MkdirReq{ReqID: rid(1), Parent: ns.RootID, Name: "data", Mode: 0o755})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var f *metaapi.CreateResp
	if err := do(func() (err error) {
		f, err = m[1].Create(ctx, &metaapi.CreateReq{ReqID: rid(2), Parent: dir.Inode.ID, Name: "a", Mode: 0o644, Exclusive: true})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The same exclusive create retried on another metad: the first result,
	// not EEXIST.
	var again *metaapi.CreateResp
	if err := do(func() (err error) {
		again, err = m[2].Create(ctx, &metaapi.CreateReq{ReqID: rid(2), Parent: dir.Inode.ID, Name: "a", Mode: 0o644, Exclusive: true})
		return err
	}); err != nil || again.Inode.ID != f.Inode.ID {
		t.Fatalf("retried create: %+v %v (first: %d)", again, err, f.Inode.ID)
	}
	// A different request for the same name: EEXIST.
	err := do(func() error {
		_, err := m[0].Create(ctx, &metaapi.CreateReq{ReqID: rid(3), Parent: dir.Inode.ID, Name: "a", Exclusive: true})
		return err
	})
	if metaapi.Errno(err) != syscall.EEXIST {
		t.Fatalf("second exclusive create: %v", err)
	}
	// Unlink, then its retry elsewhere: success both times (the idempotency
	// record), with the one time the parent changed at.
	var times [3]int64
	for i := range m {
		if err := do(func() error {
			r, err := m[i].Unlink(ctx, &metaapi.RemoveReq{ReqID: rid(4), Parent: dir.Inode.ID, Name: "a"})
			if err == nil {
				times[i] = r.DirTime
			}
			return err
		}); err != nil {
			t.Fatalf("unlink attempt %d: %v", i, err)
		}
	}
	if times[0] == 0 || times[0] != times[1] || times[1] != times[2] {
		t.Errorf("the unlink and its retry answered the parent's change times %v, want one, not 0", times)
	}
	cases := []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"lookup of a removed file", do(func() error {
			_, err := m[1].Lookup(ctx, &metaapi.LookupReq{Parent: dir.Inode.ID, Name: "a"})
			return err
		}), syscall.ENOENT},
		{"rmdir of the root's non-empty child's parent", do(func() error {
			return m[2].Rmdir(ctx, &metaapi.RemoveReq{ReqID: rid(5), Parent: ns.RootID, Name: "nope"})
		}), syscall.ENOENT},
		{"stat of no inode", do(func() error { _, err := m[0].Stat(ctx, 1<<60); return err }), syscall.ENOENT},
		{"rename into its own subtree", do(func() error {
			_, err := m[0].Rename(ctx, &metaapi.RenameReq{ReqID: rid(6), SrcParent: ns.RootID, SrcName: "data", DstParent: dir.Inode.ID, DstName: "loop"})
			return err
		}), syscall.EINVAL},
	}
	for _, c := range cases {
		if got := metaapi.Errno(c.err); got != c.want {
			t.Errorf("%s: errno %v (%v), want %v", c.name, got, c.err, c.want)
		}
	}
	var list *metaapi.ReadDirResp
	if err := do(func() (err error) { list, err = m[1].ReadDir(ctx, &metaapi.ReadDirReq{Dir: ns.RootID}); return err }); err != nil {
		t.Fatal(err)
	}
	if len(list.Entries) != 1 || list.Entries[0].Name != "data" || list.Entries[0].Type != metaapi.TypeDir {
		t.Fatalf("root lists %+v", list.Entries)
	}
	// Many exclusive creates, each retried (same request id) on a rotating
	// metad until it answers: every one succeeds exactly once.
	for i := 0; i < 40; i++ {
		id := rid(byte(100 + i))
		name := string(rune('a'+i%26)) + string(rune('a'+i/26))
		try := 0
		if err := do(func() error {
			try++
			_, err := m[try%3].Create(ctx, &metaapi.CreateReq{ReqID: id, Parent: dir.Inode.ID, Name: name, Exclusive: true})
			return err
		}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	if err := do(func() (err error) {
		list, err = m[2].ReadDir(ctx, &metaapi.ReadDirReq{Dir: dir.Inode.ID, Limit: 100})
		return err
	}); err != nil || len(list.Entries) != 40 {
		t.Fatalf("data holds %d entries, %v", len(list.Entries), err)
	}
	rep, err := ns.Check(ctx, db)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("fsck: %v %v", rep.Problems, err)
	}
	if fc := db.FaultCounts(); fc.MaybeCommitted == 0 || fc.Conflicts == 0 {
		t.Fatalf("the run did not inject the faults it is about: %+v", fc)
	}
}

// TestWriteSessionAndLength opens a file for writing, reports its length,
// closes the session, and stats it from another metad.
func TestWriteSessionAndLength(t *testing.T) {
	m := startMetads(t, 2, memkv.Open(kv.Options{}))
	ctx := context.Background()
	f, err := m[0].Create(ctx, &metaapi.CreateReq{ReqID: rid(1), Parent: ns.RootID, Name: "ckpt", Mode: 0o644, Write: true, Client: 42})
	if err != nil || len(f.Session) == 0 {
		t.Fatalf("create for writing: %+v %v", f, err)
	}
	if _, err := m[1].Report(ctx, &metaapi.ReportReq{Ino: f.Inode.ID, TruncateVer: f.Inode.TruncateVer, Length: 4096}); err != nil {
		t.Fatal(err)
	}
	closed, err := m[1].Close(ctx, &metaapi.CloseReq{Session: f.Session, TruncateVer: f.Inode.TruncateVer, Length: 10_000})
	if err != nil || closed.Inode.Length != 10_000 {
		t.Fatalf("close: %+v %v", closed, err)
	}
	st, err := m[0].Stat(ctx, f.Inode.ID)
	if err != nil || st.Inode.Length != 10_000 || st.Inode.Type != metaapi.TypeFile {
		t.Fatalf("stat: %+v %v", st, err)
	}
	if _, err := m[0].Close(ctx, &metaapi.CloseReq{Session: []byte("garbage")}); metaapi.Errno(err) != syscall.EBADF {
		t.Fatalf("close with a bad handle: %v", err)
	}
}
