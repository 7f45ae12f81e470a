package conformance

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pagesOf returns n pages, each filled with its index and tag, so a page in
// the wrong place or from the wrong version shows.
func pagesOf(tag byte, n int) []byte {
	b := make([]byte, n*4096)
	for i := range n {
		pg := b[i*4096 : (i+1)*4096]
		for j := 0; j < len(pg); j += 8 {
			binary.LittleEndian.PutUint32(pg[j:], uint32(i))
			pg[j+4] = tag
		}
	}
	return b
}

// openRandom opens p for reading with the kernel's read-ahead off, as fio's
// random jobs do: each read then reaches the mount as one request.
func openRandom(t *testing.T, p string, flag int) *os.File {
	t.Helper()
	f, err := os.OpenFile(p, flag, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestReadAroundCachesNeighbours: a random 4 KiB read of a file that fits in
// memory brings the other pages of its 64 KiB window into the page cache
// with the file's bytes, and no page outside it (a local file system's
// read-around). A change by another mount is read on the next open all the
// same, and a file open for writing here gets no read-around (the kernel
// may hold its dirty pages).
func TestReadAroundCachesNeighbours(t *testing.T) {
	const pages = 256 // 1 MiB
	d := dir(t)
	p := filepath.Join(d, "random")
	a := pagesOf('a', pages)
	if err := os.WriteFile(onSecond(t, p), a, 0o644); err != nil {
		t.Fatal(err)
	}

	f := openRandom(t, p, os.O_RDONLY)
	buf := make([]byte, 4096)
	if _, err := f.ReadAt(buf, 50*4096); err != nil || !bytes.Equal(buf, a[50*4096:51*4096]) {
		t.Fatalf("read of page 50: %v, or other bytes", err)
	}
	window := func(i int) bool { return i >= 48 && i < 64 }
	var got []bool
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got = residentPages(t, p)
		all := true
		for i := 48; i < 64; i++ {
			all = all && got[i]
		}
		if all || time.Now().After(deadline) {
			break
		}
	}
	for i, r := range got {
		if r != window(i) {
			t.Errorf("page %d cached: %v, want %v (the window of page 50 is pages 48 to 63)", i, r, window(i))
		}
	}
	for i := 48; i < 64; i++ {
		if _, err := f.ReadAt(buf, int64(i)*4096); err != nil || !bytes.Equal(buf, a[i*4096:(i+1)*4096]) {
			t.Fatalf("page %d read back other bytes than the file's (%v)", i, err)
		}
	}

	// Rewritten by the other mount: the next open here reads the new bytes,
	// not the window cached before.
	b := pagesOf('b', pages)
	if err := os.WriteFile(onSecond(t, p), b, 0o644); err != nil {
		t.Fatal(err)
	}
	g := openRandom(t, p, os.O_RDONLY)
	for _, i := range []int{49, 50, 63} {
		if _, err := g.ReadAt(buf, int64(i)*4096); err != nil || !bytes.Equal(buf, b[i*4096:(i+1)*4096]) {
			t.Fatalf("after the other mount's rewrite, page %d reads %q... (%v)", i, buf[:8], err)
		}
	}

	// Open for writing here: reads fetch only their own pages.
	w := openRandom(t, p, os.O_RDWR)
	if _, err := w.WriteAt(pagesOf('w', 1), 130*4096); err != nil {
		t.Fatal(err)
	}
	r := openRandom(t, p, os.O_RDONLY)
	if _, err := r.ReadAt(buf, 132*4096); err != nil || !bytes.Equal(buf, b[132*4096:133*4096]) {
		t.Fatalf("read of page 132 with a writer open: %v, or other bytes", err)
	}
	time.Sleep(300 * time.Millisecond) // a store would have landed by now
	got = residentPages(t, p)
	for i := 128; i < 144; i++ {
		if got[i] && i != 130 && i != 132 {
			t.Errorf("page %d was cached around a read of page 132 while the file is open for writing here", i)
		}
	}
	if _, err := r.ReadAt(buf, 130*4096); err != nil || !bytes.Equal(buf, pagesOf('w', 1)) {
		t.Fatalf("page 130 does not read what the writer here wrote (%v)", err)
	}
}
