package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/e2e/harness"
)

// TestMetaAPIThroughDiscoveredMetad drives the inode-level client API the
// front ends use, against a file system found through mgmtd: two metad (one
// killed halfway), real Pebble, real chunk engines.
func TestMetaAPIThroughDiscoveredMetad(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 2, Replicas: 2, Chains: 4, NoSync: true}, Metads: 2, ChunkSize: 64 << 10})
	ctx := context.Background()
	fs := c.FS()
	if got := len(fs.MetadAddrs()); got != 2 {
		t.Fatalf("discovered %d metad, want 2", got)
	}
	m := fs.Meta()
	cr := client.Creds{UID: 1000, GID: 100}

	if _, err := m.MkdirAll(ctx, "/bucket", 0o755, cr, false); err != nil {
		t.Fatal(err)
	}
	dir, err := m.MkdirAll(ctx, "/bucket/a/b", 0o755, cr, true)
	if err != nil || !dir.Implicit || dir.UID != 1000 {
		t.Fatalf("mkdir -p: %+v %v", dir, err)
	}
	in, sess, created, err := m.Create(ctx, dir.ID, "obj", 0o644, os.O_RDWR|os.O_CREATE|os.O_EXCL, cr)
	if err != nil || !created || sess == nil || in.GID != 100 {
		t.Fatalf("create: %+v %v %v", in, created, err)
	}
	if _, _, _, err := m.Create(ctx, dir.ID, "obj", 0o644, os.O_RDWR|os.O_CREATE|os.O_EXCL, cr); client.Errno(err) != syscall.EEXIST {
		t.Fatalf("O_EXCL create of an existing name: %v", err)
	}
	f, err := fs.OpenInode(ctx, in, sess)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320 000 bytes: 5 chunks
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := m.Stat(ctx, in.ID)
	if err != nil || st.Length != uint64(len(data)) || st.Gen <= in.Gen {
		t.Fatalf("after fsync: length %d gen %d (was %d), %v", st.Length, st.Gen, in.Gen, err)
	}
	// Shrink, then extend: the cut bytes read as zeros.
	if err := f.Truncate(ctx, 100_000); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(ctx, 200_000); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 200_000)
	if n, err := f.ReadAt(got, 0); n != len(got) || (err != nil && err != io.EOF) {
		t.Fatalf("read after truncate: %d %v", n, err)
	}
	if !bytes.Equal(got[:100_000], data[:100_000]) || !bytes.Equal(got[100_000:], make([]byte, 100_000)) {
		t.Fatal("truncate then extend: the cut range does not read as zeros")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Past the largest file size.
	if _, err := m.SetAttr(ctx, in.ID, metaapi.SetAttrReq{Mask: metaapi.SetSize, Size: metaapi.MaxFileSize + 1}); client.Errno(err) != syscall.EFBIG {
		t.Fatalf("truncate past the limit: %v", err)
	}

	// Extended attributes.
	if err := m.SetXattr(ctx, in.ID, "user.etag", []byte("x1"), 1); err != nil {
		t.Fatal(err)
	}
	if err := m.SetXattr(ctx, in.ID, "user.etag", []byte("x2"), 1); client.Errno(err) != syscall.EEXIST {
		t.Fatalf("XATTR_CREATE over an existing one: %v", err)
	}
	if v, err := m.GetXattr(ctx, in.ID, "user.etag"); err != nil || string(v) != "x1" {
		t.Fatalf("getxattr: %q %v", v, err)
	}
	if names, err := m.ListXattr(ctx, in.ID); err != nil || len(names) != 1 {
		t.Fatalf("listxattr: %v %v", names, err)
	}
	if err := m.RemoveXattr(ctx, in.ID, "user.etag"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetXattr(ctx, in.ID, "user.etag"); client.Errno(err) != syscall.ENODATA {
		t.Fatalf("removed xattr: %v", err)
	}

	// readdirplus.
	ents, more, err := m.ReadDir(ctx, dir.ID, "", 100, true)
	if err != nil || more || len(ents) != 1 || ents[0].Inode == nil || ents[0].Inode.Length != 200_000 {
		t.Fatalf("readdirplus: %+v %v %v", ents, more, err)
	}

	// A metad dies: calls go on through the other one.
	c.KillMetad(0)
	if _, err := m.Stat(ctx, in.ID); err != nil {
		t.Fatalf("stat with one metad down: %v", err)
	}
	// Conditional rename, then unlink pruning the implicit directories.
	other, _, _, err := m.Create(ctx, dir.ID, "staging", 0o644, os.O_CREATE|os.O_EXCL, cr)
	if err != nil {
		t.Fatal(err)
	}
	st, _ = m.Stat(ctx, in.ID)
	if err := m.Rename(ctx, metaapi.RenameReq{SrcParent: dir.ID, SrcName: "staging", DstParent: dir.ID, DstName: "obj", IfDstIno: in.ID, IfDstGen: st.Gen + 7}); client.Errno(err) != syscall.ECANCELED {
		t.Fatalf("rename with a stale generation: %v", err)
	}
	if err := m.Rename(ctx, metaapi.RenameReq{SrcParent: dir.ID, SrcName: "staging", DstParent: dir.ID, DstName: "obj", IfDstIno: in.ID, IfDstGen: st.Gen}); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlink(ctx, metaapi.RemoveReq{Parent: dir.ID, Name: "obj", IfIno: other.ID, PruneImplicit: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(ctx, "/bucket/a"); client.Errno(err) != syscall.ENOENT {
		t.Fatalf("implicit /bucket/a survived its last object: %v", err)
	}
	if _, err := fs.Stat(ctx, "/bucket"); err != nil {
		t.Fatalf("explicit /bucket was pruned: %v", err)
	}
	if err := fs.RemoveAll(ctx, "/bucket"); err != nil {
		t.Fatal(err)
	}
	if st, err := m.StatFS(ctx); err != nil || st.Inodes < 1 {
		t.Fatalf("statfs: %+v %v", st, err)
	}
}

// TestSessionsOfAVanishedClientAreReaped: a client that stops registering
// (crashed, or closed without closing its files) loses its write sessions,
// and the length it never reported is settled from storage: the last chunk
// sits on the 20th chain of a 32-wide stripe, past the initial chain-count
// hint of 16, so this also checks that the writer grew the hint.
func TestSessionsOfAVanishedClientAreReaped(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Chains: 32, NoSync: true, T: 500 * time.Millisecond}, ChunkSize: 64 << 10})
	ctx := context.Background()
	gone, err := c.Dial("gone")
	if err != nil {
		t.Fatal(err)
	}
	f, err := gone.Create(ctx, "/held", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	const size = 19*64<<10 + 1000 // ends 1000 bytes into chunk 19
	if _, err := f.WriteAt(bytes.Repeat([]byte{7}, size), 0); err != nil {
		t.Fatal(err)
	}
	ino := f.Inode().ID
	gone.Close() // stops registering; the file is never closed
	ns := c.Metad(0).Namespace()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := ns.Sessions(ctx, ino)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session of a vanished client still open after 20 s: %+v", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if in, err := ns.Stat(ctx, ino); err != nil || in.Length != size {
		t.Fatalf("length after reaping: %d (%v), want %d settled from storage", in.Length, err, size)
	}
	// A live client's session is not reaped.
	live := c.FS()
	g, err := live.Create(ctx, "/kept", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // several reap rounds
	if s, err := ns.Sessions(ctx, g.Inode().ID); err != nil || len(s) != 1 {
		t.Fatalf("live client's session: %+v %v", s, err)
	}
	g.Close()
}

// TestOpenTruncDropsTheOldChunks: O_TRUNC through Open and Create cuts the
// data, not only the length: a shorter rewrite closes at its own length
// (length settling finds no old chunk), and the cut range reads as zeros.
func TestOpenTruncDropsTheOldChunks(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Chains: 4, NoSync: true}, ChunkSize: 64 << 10})
	ctx := context.Background()
	fs := c.FS()
	m := fs.Meta()
	write := func(in metaapi.Inode, sess []byte, n int, b byte) {
		t.Helper()
		f, err := fs.OpenInode(ctx, in, sess)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(bytes.Repeat([]byte{b}, n), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	in, sess, _, err := m.Create(ctx, 1, "f", 0o644, os.O_RDWR|os.O_CREATE, client.Creds{})
	if err != nil {
		t.Fatal(err)
	}
	write(in, sess, 300_000, 'a')
	for _, how := range []string{"open", "create"} {
		var sess []byte
		if how == "open" {
			in, sess, err = m.Open(ctx, in.ID, os.O_RDWR|os.O_TRUNC, client.Creds{})
		} else {
			in, sess, _, err = m.Create(ctx, 1, "f", 0o644, os.O_RDWR|os.O_CREATE|os.O_TRUNC, client.Creds{})
		}
		if err != nil {
			t.Fatal(err)
		}
		write(in, sess, 1000, 'b')
		st, err := m.Stat(ctx, in.ID)
		if err != nil || st.Length != 1000 {
			t.Fatalf("%s with O_TRUNC, then 1000 bytes: length %d (%v)", how, st.Length, err)
		}
		if _, err := m.SetAttr(ctx, in.ID, metaapi.SetAttrReq{Mask: metaapi.SetSize, Size: 200_000}); err != nil {
			t.Fatal(err)
		}
		r, err := fs.Open(ctx, "/f")
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 200_000)
		if n, err := r.ReadAt(got, 0); n != len(got) || (err != nil && err != io.EOF) {
			t.Fatalf("read: %d %v", n, err)
		}
		if !bytes.Equal(got[:1000], bytes.Repeat([]byte{'b'}, 1000)) || !bytes.Equal(got[1000:], make([]byte, 199_000)) {
			t.Fatalf("%s with O_TRUNC: old bytes came back past the new end", how)
		}
		// Back to the 300 000-byte file for the next round.
		if _, err := m.SetAttr(ctx, in.ID, metaapi.SetAttrReq{Mask: metaapi.SetSize, Size: 0}); err != nil {
			t.Fatal(err)
		}
		in, sess, err = m.Open(ctx, in.ID, os.O_RDWR, client.Creds{})
		if err != nil {
			t.Fatal(err)
		}
		write(in, sess, 300_000, 'a')
	}
}
