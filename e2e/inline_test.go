package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/metad/ns"
)

// Small files written whole keep their bytes in the inode
// (metad/ns/inline.go, core/client/inline.go): they read back with every
// storage node down, and writing to them again moves the bytes to chunks
// first, so every way of writing on reads what was written.
func TestInlineSmallFiles(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 2, Chains: 2, NoSync: true}})
	ctx := context.Background()
	fs := c.FS()
	other, err := c.Dial("other")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	write := func(fs *client.FS, p string, data []byte, off int64, flags int) {
		t.Helper()
		f, err := fs.OpenFile(ctx, p, flags, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(data, off); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(fs *client.FS, p string, want []byte, inline bool) {
		t.Helper()
		f, err := fs.Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if st := f.Inode(); (len(st.Inline) > 0) != inline {
			t.Errorf("%s: inline %v (%d bytes), want %v", p, len(st.Inline) > 0, len(st.Inline), inline)
		}
		got := make([]byte, len(want)+10)
		n, err := f.ReadAt(got, 0)
		if err != nil && err != io.EOF {
			t.Fatalf("%s: read: %v", p, err)
		}
		if !bytes.Equal(got[:n], want) {
			t.Fatalf("%s: read %q, want %q", p, got[:n], want)
		}
	}
	create := os.O_CREATE | os.O_WRONLY

	write(fs, "/small", []byte("hello"), 0, create|os.O_EXCL)
	expect(other, "/small", []byte("hello"), true)
	big := bytes.Repeat([]byte("b"), client.DefaultInlineMax+1)
	write(fs, "/big", big, 0, create)
	expect(other, "/big", big, false)

	// A sparse small file: the gap reads zeros.
	f, err := fs.OpenFile(ctx, "/sparse", create, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("end"), 100)
	f.WriteAt([]byte("st"), 0)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	expect(other, "/sparse", append(append([]byte("st"), make([]byte, 98)...), "end"...), true)

	// Writes that outgrow the limit send what was held first.
	f, err = fs.OpenFile(ctx, "/grown", create, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("head"), 0)
	if _, err := f.WriteAt(big, 4); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	expect(other, "/grown", append([]byte("head"), big...), false)

	// A read through the writing handle sees what it holds.
	f, err = fs.OpenFile(ctx, "/readback", create, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("abc"), 0)
	got := make([]byte, 3)
	if n, err := f.ReadAt(got, 0); n != 3 || string(got) != "abc" {
		t.Fatalf("read through the writer: %q, %v", got[:n], err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	expect(other, "/readback", []byte("abc"), false)

	// Writing to an inline file again: its bytes move to chunks first.
	write(other, "/small", []byte(" world"), 5, os.O_WRONLY)
	expect(fs, "/small", []byte("hello world"), false)
	write(fs, "/small", []byte("J"), 0, os.O_WRONLY)
	expect(other, "/small", []byte("Jello world"), false)

	// Two writers open an inline file at once: both spill, one spill is
	// adopted, and neither writer's bytes are lost.
	write(fs, "/two", []byte("0123456789"), 0, create)
	var wg sync.WaitGroup
	for i, cl := range []*client.FS{fs, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := cl.OpenFile(ctx, "/two", os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := f.WriteAt([]byte{'A' + byte(i)}, int64(i)); err != nil {
				t.Error(err)
			}
			if err := f.Close(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	expect(other, "/two", []byte("AB23456789"), false)

	// Two writers of a new file: neither close may keep its bytes in the
	// inode, and each sends only what it wrote (not the gap before it).
	var ws []*client.File
	for _, cl := range []*client.FS{fs, other} {
		f, err := cl.OpenFile(ctx, "/pair", create, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, f)
	}
	ws[0].WriteAt([]byte("A"), 0)
	ws[1].WriteAt([]byte("B"), 10)
	for _, f := range ws {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	expect(fs, "/pair", []byte("A\x00\x00\x00\x00\x00\x00\x00\x00\x00B"), false)

	// A listing of many small files leaves their bytes out (one page of
	// them would outgrow a reply); a file opened from a listed inode reads
	// its bytes all the same.
	if err := fs.Mkdir(ctx, "/many", 0o755); err != nil {
		t.Fatal(err)
	}
	page := bytes.Repeat([]byte("p"), client.DefaultInlineMax)
	for i := range 600 {
		write(fs, fmt.Sprintf("/many/f%03d", i), page, 0, create)
	}
	dir, err := fs.Stat(ctx, "/many")
	if err != nil {
		t.Fatal(err)
	}
	ents, _, err := fs.Meta().ReadDir(ctx, dir.ID, "", 1000, true)
	if err != nil || len(ents) != 600 {
		t.Fatalf("readdir of 600 small files: %d entries, %v", len(ents), err)
	}
	listed := *ents[17].Inode
	if len(listed.Inline) != 0 || !listed.InlineOmitted {
		t.Fatalf("a listed small file: %d inline bytes, omitted %v", len(listed.Inline), listed.InlineOmitted)
	}
	lf, err := fs.OpenInode(ctx, listed, nil)
	if err != nil {
		t.Fatal(err)
	}
	got = make([]byte, len(page))
	if n, _ := lf.ReadAt(got, 0); !bytes.Equal(got[:n], page) {
		t.Fatalf("a file opened from its listing reads %d bytes, %q...", n, got[:min(n, 8)])
	}

	// A read open, as a mount makes it, by the client that wrote or read an
	// inline file's bytes names the generation it holds (OpenReq.KnownGen)
	// and gets them from its copy; a change anywhere moves the generation,
	// and the next open reads the new bytes.
	readOpen := func(cl *client.FS, p string) string {
		t.Helper()
		st, err := cl.Stat(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		in, _, err := cl.Meta().Open(ctx, st.ID, os.O_RDONLY, client.Creds{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := cl.OpenInode(ctx, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		n, err := f.ReadAt(buf, 0)
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		return string(buf[:n])
	}
	write(fs, "/kept", []byte("first"), 0, create)
	for _, cl := range []*client.FS{fs, fs, other, other} {
		if got := readOpen(cl, "/kept"); got != "first" {
			t.Fatalf("read open of /kept: %q", got)
		}
	}
	write(other, "/kept", []byte("second"), 0, os.O_WRONLY|os.O_TRUNC)
	for _, cl := range []*client.FS{fs, other} {
		if got := readOpen(cl, "/kept"); got != "second" {
			t.Fatalf("read open after another client rewrote /kept: %q", got)
		}
	}
	kept, _ := fs.Stat(ctx, "/kept")
	if _, err := other.Meta().SetAttr(ctx, kept.ID, metaapi.SetAttrReq{Mask: metaapi.SetSize, Size: 3}); err != nil {
		t.Fatal(err)
	}
	if got := readOpen(fs, "/kept"); got != "sec" {
		t.Fatalf("read open after another client truncated /kept: %q", got)
	}

	// An inline file reads with no storage node up.
	write(fs, "/alone", []byte("no storage needed"), 0, create)
	fresh, err := c.Dial("fresh")
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	c.Kill(0)
	c.Kill(1)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := fresh.Open(rctx, "/alone")
	if err != nil {
		t.Fatal(err)
	}
	got = make([]byte, 64)
	if n, _ := r.ReadAtContext(rctx, got, 0); string(got[:n]) != "no storage needed" {
		t.Fatalf("with storage down: read %q", got[:n])
	}
	if rep, err := ns.Check(ctx, c.MetaKV); err != nil || !rep.Clean() {
		t.Fatalf("fsck: %v %s", err, rep.String())
	}
}

// The metadata store does not encrypt: a cluster that encrypts chunk
// content at rest keeps even the smallest file's bytes in chunks.
func TestInlineOffWhenStorageEncrypts(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{NoSync: true, EncryptionKey: key}})
	ctx := context.Background()
	fs := c.FS()
	f, err := fs.Create(ctx, "/secret", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("top secret"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := fs.Open(ctx, "/secret")
	if err != nil {
		t.Fatal(err)
	}
	if in := r.Inode(); len(in.Inline) != 0 || in.Length != 10 {
		t.Fatalf("inode: %d inline bytes, length %d: the bytes reached the unencrypted metadata store", len(in.Inline), in.Length)
	}
	got := make([]byte, 10)
	if n, _ := r.ReadAt(got, 0); string(got[:n]) != "top secret" {
		t.Fatalf("read %q", got[:n])
	}
}
