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
