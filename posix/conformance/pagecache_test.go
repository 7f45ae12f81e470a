package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident counts the pages of the file at p that the kernel's page cache
// holds, through an open of its own.
func resident(t *testing.T, p string) (in, of int) {
	t.Helper()
	vec := residentPages(t, p)
	for _, r := range vec {
		if r {
			in++
		}
	}
	return in, len(vec)
}

// residentPages reports page by page whether the kernel's page cache holds
// the file at p (mincore of a mapping, which faults nothing in).
func residentPages(t *testing.T, p string) []bool {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal("mincore:", errno)
	}
	pages := make([]bool, len(vec))
	for i, v := range vec {
		pages[i] = v&1 != 0
	}
	return pages
}

// TestOwnWritesStayCached: a file this mount wrote, alone, is read on the
// next open from the page cache its writes filled, as on a local file system;
// a change by another mount, made after or during those writes, is seen on
// the next open all the same (close-to-open).
func TestOwnWritesStayCached(t *testing.T) {
	d := dir(t)
	p := filepath.Join(d, "written")
	a := bytes.Repeat([]byte("a"), 256<<10)
	if err := os.WriteFile(p, a, 0o644); err != nil {
		t.Fatal(err)
	}
	if in, of := resident(t, p); in != of {
		t.Errorf("after writing it here, %d of the file's %d pages are cached on the next open", in, of)
	}
	if got := mustRead(t, p); got != string(a) {
		t.Fatalf("the mount reads %d bytes that are not what it wrote", len(got))
	}
	// Laid out as fio and databases do: sized first, then written.
	laid := filepath.Join(d, "laid-out")
	lf, err := os.Create(laid)
	if err != nil {
		t.Fatal(err)
	}
	if err := lf.Truncate(128 << 10); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fallocate(int(lf.Fd()), 0, 0, 256<<10); err != nil {
		t.Fatal(err)
	}
	if _, err := lf.WriteAt(a, 0); err != nil {
		t.Fatal(err)
	}
	if err := lf.Close(); err != nil {
		t.Fatal(err)
	}
	if in, of := resident(t, laid); in != of {
		t.Errorf("after sizing and writing it here, %d of the file's %d pages are cached on the next open", in, of)
	}
	if got := mustRead(t, laid); got != string(a) {
		t.Fatalf("the mount reads %d bytes that are not what it wrote", len(got))
	}

	// Rewritten by the other mount after: the next open here reads that.
	b := bytes.Repeat([]byte("b"), 256<<10)
	if err := os.WriteFile(onSecond(t, p), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, p); got != string(b) {
		t.Fatalf("after the other mount rewrote it, this mount reads %q...", got[:8])
	}

	// Written by both at once: this mount's writes were not the only ones,
	// so its cache of the part the other wrote is not kept.
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(a, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil { // in the cluster before the other mount writes
		t.Fatal(err)
	}
	g, err := os.OpenFile(onSecond(t, p), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteAt([]byte("middle"), 100<<10); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("z"), int64(len(a)-1)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), a...)
	copy(want[100<<10:], "middle")
	want[len(want)-1] = 'z'
	if got := mustRead(t, p); got != string(want) {
		i := 0
		for i < len(got) && got[i] == want[i] {
			i++
		}
		t.Fatalf("after writes by both mounts this mount reads %d bytes, differing from theirs from byte %d", len(got), i)
	}
	if got := inCluster(t, p); !bytes.Equal(got, want) {
		t.Fatalf("the cluster holds other bytes than both mounts wrote")
	}
}

// TestLongOpenReaderSeesOtherWrites: a file held open here while another
// mount rewrites it is read afresh once this mount learns of the change (its
// attributes time out and are fetched again), as the kernel does by the
// mtime on its own.
func TestLongOpenReaderSeesOtherWrites(t *testing.T) {
	d := dir(t)
	p := filepath.Join(d, "held")
	if err := os.WriteFile(p, bytes.Repeat([]byte("a"), 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 64<<10)
	if _, err := r.ReadAt(buf, 0); err != nil || buf[0] != 'a' {
		t.Fatalf("first read: %q %v", buf[:1], err)
	}
	if err := os.WriteFile(onSecond(t, p), bytes.Repeat([]byte("c"), 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := r.Stat(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ReadAt(buf, 0); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(buf, bytes.Repeat([]byte("c"), 64<<10)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the other mount rewrote it, the open file here still reads %q...", buf[:4])
		}
		time.Sleep(50 * time.Millisecond)
	}
}
