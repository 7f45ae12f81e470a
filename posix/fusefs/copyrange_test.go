package fusefs

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// copy_file_range of a whole file into a new one shares chunks: the copy
// reads back byte-identical and reads through the source's layer (no byte
// was copied); writes on either side stay on their side; cp(1), which uses
// the call, gets the same; a partial copy is left to the kernel and still
// right.
func TestCopyFileRangeShares(t *testing.T) {
	c, m := mountCluster(t, Options{})
	d := m.Dir()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(8, 9))
	data := make([]byte, 9<<20+321)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	src := filepath.Join(d, "src.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	layers := func(name string) int {
		t.Helper()
		in, err := c.FS().Meta().Resolve(ctx, "/"+name, false)
		if err != nil {
			t.Fatal(err)
		}
		return len(in.Layers)
	}
	same := func(p string, want []byte) {
		t.Helper()
		dropPages(t, p)
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes (want %d), %v", filepath.Base(p), len(got), len(want), err)
		}
	}

	// The call itself, as a program makes it.
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(filepath.Join(d, "dst.bin"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for {
		n, err := unix.CopyFileRange(int(in.Fd()), nil, int(out.Fd()), nil, 1<<30, 0)
		if err != nil {
			t.Fatalf("copy_file_range: %v", err)
		}
		if n == 0 {
			break
		}
		total += n
	}
	in.Close()
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if total != len(data) {
		t.Fatalf("copy_file_range copied %d bytes, want %d", total, len(data))
	}
	same(filepath.Join(d, "dst.bin"), data)
	if layers("dst.bin") != 1 {
		t.Fatalf("the copy does not share the source's chunks (%d layers)", layers("dst.bin"))
	}

	// Writes on each side stay there.
	f, err := os.OpenFile(filepath.Join(d, "dst.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("copy side"), 4<<20+3); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dst := bytes.Clone(data)
	copy(dst[4<<20+3:], "copy side")
	g, err := os.OpenFile(src, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.Write([]byte("more"))
	g.Close()
	data2 := append(bytes.Clone(data), "more"...)
	same(filepath.Join(d, "dst.bin"), dst)
	same(src, data2)

	// cp(1): coreutils 9 copies with copy_file_range.
	if _, err := exec.LookPath("cp"); err == nil {
		if out, err := exec.Command("cp", src, filepath.Join(d, "cp.bin")).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, out)
		}
		same(filepath.Join(d, "cp.bin"), data2)
		if layers("cp.bin") == 0 {
			t.Fatal("cp's copy does not share chunks: did cp stop using copy_file_range?")
		}
	}

	// A partial copy: EOPNOTSUPP here, the kernel copies the bytes.
	in, _ = os.Open(src)
	out, _ = os.OpenFile(filepath.Join(d, "part.bin"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	off := int64(1000)
	n, err := unix.CopyFileRange(int(in.Fd()), &off, int(out.Fd()), nil, 3<<20, 0)
	in.Close()
	out.Close()
	if err != nil || n != 3<<20 {
		t.Fatalf("partial copy_file_range: %d %v", n, err)
	}
	same(filepath.Join(d, "part.bin"), data2[1000:1000+3<<20])
	if layers("part.bin") != 0 {
		t.Fatal("a partial copy shares chunks")
	}
}

// A source whose writer closed one descriptor (the flush ends its write
// session) while a duplicate stays open is shared at once: the kernel's
// release comes only with the last close, and a cp right after a write
// must not fall back to copying bytes for it. A write through the
// duplicate afterwards stays out of the copy.
func TestCopyFileRangeAfterFlush(t *testing.T) {
	c, m := mountCluster(t, Options{})
	d := m.Dir()
	data := bytes.Repeat([]byte("flushed;"), 300_000)
	w, err := os.OpenFile(filepath.Join(d, "src.bin"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	// A descriptor left open at a failure would hang the test's exit on
	// its own mount.
	t.Cleanup(func() { unix.Close(fd) })
	if err := w.Close(); err != nil { // a flush; the handle stays for fd
		t.Fatal(err)
	}
	in, err := os.Open(filepath.Join(d, "src.bin"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(filepath.Join(d, "dst.bin"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	n, err := unix.CopyFileRange(int(in.Fd()), nil, int(out.Fd()), nil, len(data), 0)
	in.Close()
	if cerr := out.Close(); err != nil || cerr != nil || n != len(data) {
		t.Fatalf("copy_file_range: %d of %d bytes, %v, close %v", n, len(data), err, cerr)
	}
	dst, err := c.FS().Meta().Resolve(context.Background(), "/dst.bin", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(dst.Layers) != 1 {
		t.Fatalf("the copy of a flushed source does not share its chunks (%d layers)", len(dst.Layers))
	}
	if _, err := unix.Pwrite(fd, []byte("later"), 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fsync(fd); err != nil {
		t.Fatal(err)
	}
	dropPages(t, filepath.Join(d, "dst.bin"))
	got, err := os.ReadFile(filepath.Join(d, "dst.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the copy after a write through the duplicate: %d bytes, %v (want the flushed bytes)", len(got), err)
	}
}
