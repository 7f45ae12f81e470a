package conformance

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/posix/native"
)

func TestSparseLargeFile(t *testing.T) {
	d := dir(t)
	p := filepath.Join(d, "sparse")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	const far = 5<<30 + 12345 // past 4 GiB: 64-bit offsets all the way
	if _, err := f.WriteAt([]byte("end"), far); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("start"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Size() != far+3 {
		t.Fatalf("size %d, want %d (%v)", st.Size(), far+3, err)
	}
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 8)
	for _, c := range []struct {
		off  int64
		want string
	}{
		{0, "start\x00\x00\x00"},
		{1 << 30, "\x00\x00\x00\x00\x00\x00\x00\x00"},
		{4<<30 - 4, "\x00\x00\x00\x00\x00\x00\x00\x00"},
		{far - 5, "\x00\x00\x00\x00\x00end"},
	} {
		n, err := r.ReadAt(buf, c.off)
		if (err != nil && err != io.EOF) || string(buf[:n]) != c.want {
			t.Errorf("read at %d: %q %v, want %q", c.off, buf[:n], err, c.want)
		}
	}
	// Truncate down past a hole and up again: the tail reads as zeros.
	if err := os.Truncate(p, 3); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 10); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, p); got != "sta\x00\x00\x00\x00\x00\x00\x00" {
		t.Errorf("after truncate down and up: %q", got)
	}
}

func TestAppendAndReaders(t *testing.T) {
	d := dir(t)
	p := filepath.Join(d, "log")
	a, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var want bytes.Buffer
	for i := range 20 {
		w := a
		if i%2 == 1 {
			w = b
		}
		line := []byte{byte('a' + i), '\n'}
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
		want.Write(line)
		// A reader opened before any write sees every append.
		got := make([]byte, want.Len()+10)
		n, _ := r.ReadAt(got, 0)
		if !bytes.Equal(got[:n], want.Bytes()) {
			t.Fatalf("after %d appends the early reader sees %q", i+1, got[:n])
		}
	}
	a.Close()
	b.Close()
	if got := mustRead(t, p); got != want.String() {
		t.Errorf("appended file: %q", got)
	}
}

// TestConcurrentWriters writes several files at once through the mount.
func TestConcurrentWriters(t *testing.T) {
	d := dir(t)
	const files, size = 6, 3 << 20
	var wg sync.WaitGroup
	errs := make(chan error, files)
	for i := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := bytes.Repeat([]byte{byte(i + 1)}, size)
			errs <- os.WriteFile(filepath.Join(d, string(rune('a'+i))), data, 0o644)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range files {
		got, err := os.ReadFile(filepath.Join(d, string(rune('a'+i))))
		if err != nil || len(got) != size || bytes.Count(got, []byte{byte(i + 1)}) != size {
			t.Errorf("file %d: %d bytes, %v", i, len(got), err)
		}
	}
}

func TestReadDirLarge(t *testing.T) {
	d := dir(t)
	const n = 1300 // more than one metad page and several FUSE buffers
	for i := range n {
		f, err := os.Create(filepath.Join(d, name(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	ents, err := os.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != n {
		t.Fatalf("readdir: %d entries, want %d", len(ents), n)
	}
	for i, e := range ents {
		if e.Name() != name(i) {
			t.Fatalf("entry %d is %q, want %q", i, e.Name(), name(i))
		}
	}
	// Reading in small batches (many readdir calls with offsets).
	f, err := os.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total := 0
	for {
		names, err := f.Readdirnames(7)
		total += len(names)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if total != n {
		t.Errorf("batched readdir saw %d entries", total)
	}
}

func name(i int) string {
	const digits = "0123456789"
	return "f" + string([]byte{digits[i/1000%10], digits[i/100%10], digits[i/10%10], digits[i%10]})
}

// TestNativeThroughMount registers a buffer and a ring through the mount's
// /.flyfs directory and does IO on files opened through the mount.
func TestNativeThroughMount(t *testing.T) {
	d := dir(t)
	p := filepath.Join(d, "native")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ref, err := native.FileOf(mountDir, f)
	if err != nil {
		t.Fatal(err)
	}
	iov, err := native.NewIov(mountDir, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer iov.Close()
	ring, err := native.NewRing(mountDir, 64, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer ring.Close()
	// The registrations show in the virtual directory.
	ents, err := os.ReadDir(filepath.Join(mountDir, native.VirtDir))
	if err != nil || len(ents) < 2 {
		t.Fatalf("/.flyfs lists %v, %v", ents, err)
	}
	// Read the file through the kernel first so its pages are cached: the
	// native writes must invalidate them.
	if _, err := f.WriteAt(bytes.Repeat([]byte("k"), 1<<20), 0); err != nil {
		t.Fatal(err)
	}
	io.ReadAll(io.NewSectionReader(f, 0, 1<<20))

	// 48 writes of 64 KiB + 3 bytes (unaligned), submitted as one batch.
	const n, sz = 48, 64<<10 + 3
	want := make([]byte, n*sz)
	for i := range want {
		want[i] = byte(i * 31 / 7)
	}
	copy(iov.Buf, want)
	for i := range n {
		if err := ring.PrepWrite(iov, i*sz, sz, ref, int64(i*sz)+1, uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	ring.Submit()
	cqes := make([]native.Completion, 64)
	for got := 0; got < n; {
		k, err := ring.Wait(cqes, n-got, 10*time.Second)
		if err != nil || k == 0 {
			t.Fatalf("wait: %d %v", k, err)
		}
		for _, c := range cqes[:k] {
			if c.Result != sz {
				t.Fatalf("write %d: result %d", c.Userdata, c.Result)
			}
		}
		got += k
	}
	// Through the kernel: the new bytes (not the cached "k" pages).
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, 1); err != nil {
		t.Fatal(err)
	}
	if i := firstDiff(got, want); i >= 0 {
		t.Fatalf("kernel read after native writes differs at %d", i)
	}
	if st, _ := f.Stat(); st.Size() != int64(len(want))+1 {
		t.Errorf("size after native writes %d, want %d", st.Size(), len(want)+1)
	}
	// Read back through the ring into another part of the buffer.
	clear(iov.Buf)
	for i := range n {
		if err := ring.PrepRead(iov, i*sz, sz, ref, int64(i*sz)+1, uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	ring.Submit()
	for got := 0; got < n; {
		k, err := ring.Wait(cqes, n-got, 10*time.Second)
		if err != nil || k == 0 {
			t.Fatalf("wait: %d %v", k, err)
		}
		for _, c := range cqes[:k] {
			if c.Result != sz {
				t.Fatalf("read %d: result %d", c.Userdata, c.Result)
			}
		}
		got += k
	}
	if i := firstDiff(iov.Buf[:len(want)], want); i >= 0 {
		t.Fatalf("native read differs at %d", i)
	}
	// A file not open through the mount is refused.
	closed, err := os.Create(filepath.Join(d, "closed"))
	if err != nil {
		t.Fatal(err)
	}
	cref, _ := native.FileOf(mountDir, closed)
	closed.Close()
	time.Sleep(50 * time.Millisecond) // release is asynchronous
	if err := ring.PrepRead(iov, 0, 10, cref, 0, 99); err != nil {
		t.Fatal(err)
	}
	ring.Submit()
	if k, err := ring.Wait(cqes, 1, 10*time.Second); err != nil || k != 1 || cqes[0].Result != -int64(syscall.EBADF) {
		t.Errorf("IO on a file not open: %d %v %+v, want -EBADF", k, err, cqes[0])
	}
}

// TestNativeExampleProgram runs the native API's example program against
// the mount.
func TestNativeExampleProgram(t *testing.T) {
	d := dir(t)
	if testing.Short() {
		t.Skip("builds the example; skipped in -short")
	}
	bin := filepath.Join(t.TempDir(), "example")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/flyfs/flyfs/posix/native/example").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "-mount", mountDir, "-file", filepath.Base(d)+"/ex.bin", "-ios", "40", "-size", "70001").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("contents match")) {
		t.Fatalf("example: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if st, err := os.Stat(filepath.Join(d, "ex.bin")); err != nil || st.Size() != 40*70001 {
		t.Errorf("example's file: %v %v", st, err)
	}
}
