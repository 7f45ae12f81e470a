package native

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fileBackend serves IOs on local files named by a made-up inode number; it
// exercises the ring without a mount (the mount's own test covers that).
type fileBackend struct {
	mu     sync.Mutex
	files  map[uint64]*os.File
	denied map[uint64]bool
}

func (b *fileBackend) file(ino uint64) (*os.File, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, ok := b.files[ino]
	if !ok {
		return nil, syscall.EBADF
	}
	return f, nil
}

func (b *fileBackend) ReadAt(ctx context.Context, ino uint64, p []byte, off int64) (int, error) {
	f, err := b.file(ino)
	if err != nil {
		return 0, err
	}
	return f.ReadAt(p, off)
}

func (b *fileBackend) WriteAt(ctx context.Context, ino uint64, p []byte, off int64) (int, error) {
	f, err := b.file(ino)
	if err != nil {
		return 0, err
	}
	return f.WriteAt(p, off)
}

func (b *fileBackend) Access(ctx context.Context, ino uint64, uid, gid uint32, write bool) error {
	if b.denied[ino] {
		return syscall.EACCES
	}
	return nil
}

// withDaemon routes the library's registrations to d, as the mount's
// virtual directory does, with real symlinks in dir standing for the links.
func withDaemon(t *testing.T, d *Daemon) string {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, VirtDir), 0o755)
	register = func(target, link string) error {
		if _, err := d.Register(filepath.Base(link), target, Caller{UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), PID: uint32(syscall.Gettid())}); err != nil {
			return err
		}
		return os.Symlink(target, link)
	}
	deregister = func(link string) error {
		err := d.Deregister(filepath.Base(link))
		os.Remove(link)
		return err
	}
	t.Cleanup(func() { register, deregister = os.Symlink, os.Remove })
	return dir
}

func TestRingReadWrite(t *testing.T) {
	if _, err := os.Stat(ShmDir); err != nil {
		t.Skip("no /dev/shm")
	}
	b := &fileBackend{files: map[uint64]*os.File{}, denied: map[uint64]bool{}}
	f, err := os.Create(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b.files[7] = f
	d := NewDaemon(b, 5*time.Second, nil)
	defer d.Close()
	mnt := withDaemon(t, d)

	iov, err := NewIov(mnt, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer iov.Close()
	ring, err := NewRing(mnt, 100, 8) // rounds up to 128
	if err != nil {
		t.Fatal(err)
	}
	defer ring.Close()
	if ring.Entries() != 128 {
		t.Fatalf("entries %d, want 128", ring.Entries())
	}
	if len(d.List()) != 2 {
		t.Fatalf("daemon lists %d registrations, want 2", len(d.List()))
	}

	// Write 200 pieces of random sizes at unaligned offsets, more than the
	// ring holds, reaping as it fills.
	rng := rand.New(rand.NewPCG(1, 2))
	want := make([]byte, 600_000)
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	copy(iov.Buf, want)
	type piece struct{ off, n int }
	var pieces []piece
	for off := 0; off < len(want); {
		n := min(1+rng.IntN(7000), len(want)-off)
		pieces = append(pieces, piece{off, n})
		off += n
	}
	fileOf := File{Ino: 7}
	cqes := make([]Completion, 64)
	pending := map[uint64]int{}
	reap := func(min int) {
		n, err := ring.Wait(cqes, min, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cqes[:n] {
			p := pieces[c.Userdata]
			if c.Result != int64(p.n) {
				t.Fatalf("io %d: result %d, want %d", c.Userdata, c.Result, p.n)
			}
			delete(pending, c.Userdata)
		}
	}
	for i, p := range pieces {
		for {
			err := ring.PrepWrite(iov, p.off, p.n, fileOf, int64(p.off)+3, uint64(i))
			if errors.Is(err, ErrRingFull) {
				ring.Submit()
				reap(1)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		pending[uint64(i)] = p.n
	}
	ring.Submit()
	for len(pending) > 0 {
		reap(len(pending))
	}
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, 3); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("file content differs from what the ring wrote")
	}

	// Read it back into the other half of the buffer, including a read
	// across the end of the file (short) and one past it (0).
	clear(iov.Buf)
	if err := ring.PrepRead(iov, 1000, len(want), fileOf, 3, 1); err != nil {
		t.Fatal(err)
	}
	if err := ring.PrepRead(iov, 0, 500, fileOf, int64(len(want))-97, 2); err != nil {
		t.Fatal(err)
	}
	if err := ring.PrepRead(iov, 0, 10, fileOf, 1<<30, 3); err != nil {
		t.Fatal(err)
	}
	ring.Submit()
	res := map[uint64]int64{}
	for len(res) < 3 {
		n, err := ring.Wait(cqes, 3-len(res), 10*time.Second)
		if err != nil || n == 0 {
			t.Fatalf("wait: %d, %v", n, err)
		}
		for _, c := range cqes[:n] {
			res[c.Userdata] = c.Result
		}
	}
	if res[1] != int64(len(want)) || res[2] != 100 || res[3] != 0 {
		t.Fatalf("read results %v, want 1:%d 2:100 3:0", res, len(want))
	}
	if !bytes.Equal(iov.Buf[1000:1000+len(want)], want) {
		t.Fatal("ring read returned other bytes than the file holds")
	}
}

func TestRingErrors(t *testing.T) {
	if _, err := os.Stat(ShmDir); err != nil {
		t.Skip("no /dev/shm")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := &fileBackend{files: map[uint64]*os.File{7: f, 8: f}, denied: map[uint64]bool{8: true}}
	d := NewDaemon(b, 5*time.Second, nil)
	defer d.Close()
	mnt := withDaemon(t, d)
	iov, err := NewIov(mnt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := NewRing(mnt, 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ring.Close()

	if err := ring.PrepRead(iov, 4000, 200, File{7}, 0, 0); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("io past the buffer: %v, want EINVAL", err)
	}
	check := func(name string, want syscall.Errno, prep func() error) {
		t.Helper()
		if err := prep(); err != nil {
			t.Fatal(err)
		}
		ring.Submit()
		var c [1]Completion
		n, err := ring.Wait(c[:], 1, 10*time.Second)
		if err != nil || n != 1 {
			t.Fatalf("%s: wait %d, %v", name, n, err)
		}
		if c[0].Result != -int64(want) {
			t.Fatalf("%s: result %d, want -%d (%v)", name, c[0].Result, int(want), want)
		}
	}
	check("file not open", syscall.EBADF, func() error { return ring.PrepRead(iov, 0, 10, File{99}, 0, 0) })
	check("no access", syscall.EACCES, func() error { return ring.PrepWrite(iov, 0, 10, File{8}, 0, 0) })
	check("prefetch without a cache", syscall.EOPNOTSUPP, func() error { return ring.PrepPrefetch(File{7}, 0, 10, 0) })
	// A buffer deregistered after preparing: the daemon refuses the IO.
	ghost := &Iov{ID: newID(), Buf: iov.Buf}
	check("unknown buffer", syscall.EBADF, func() error { return ring.PrepRead(ghost, 0, 10, File{7}, 0, 0) })
	// Ring full: 8 entries, none reaped.
	for i := range 8 {
		if err := ring.PrepRead(iov, 0, 1, File{7}, 0, uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ring.PrepRead(iov, 0, 1, File{7}, 0, 9); !errors.Is(err, ErrRingFull) {
		t.Fatalf("ninth IO on an 8-entry ring: %v, want ErrRingFull", err)
	}
	ring.Submit()
	cq := make([]Completion, 16)
	got := 0
	for got < 8 {
		n, err := ring.Wait(cq, 8-got, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	if err := iov.Close(); err != nil {
		t.Fatal(err)
	}

	// Registration names and targets the daemon refuses.
	for _, c := range []struct{ name, target string }{
		{"flyfs-iov-xyz", "/dev/shm/flyfs-iov-xyz"},
		{"flyfs-iov-" + newID().String(), "/etc/passwd"},
		{"other", "/dev/shm/other"},
		{"flyfs-ior-" + newID().String(), "/dev/shm/flyfs-ior-missing"},
	} {
		if _, err := d.Register(c.name, c.target, Caller{}); err == nil {
			t.Errorf("register %s -> %s: accepted", c.name, c.target)
		}
	}
	// Closing the daemon detaches the ring: a waiter returns.
	d.Close()
	if err := ring.PrepRead(&Iov{ID: newID(), Buf: make([]byte, 16)}, 0, 1, File{7}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := ring.Wait(cq, 1, 10*time.Second); !errors.Is(err, ErrDetached) {
		t.Fatalf("wait on a detached ring: %v, want ErrDetached", err)
	}
}

// cachingBackend is a fileBackend with a cache: Prefetch records what it
// was asked and answers that half the range was fetched.
type cachingBackend struct {
	*fileBackend
	amu   sync.Mutex
	asked []int64
}

func (b *cachingBackend) Prefetch(ctx context.Context, ino uint64, off, n int64) (int64, error) {
	if _, err := b.file(ino); err != nil {
		return 0, err
	}
	b.amu.Lock()
	defer b.amu.Unlock()
	b.asked = append(b.asked, off, n)
	return n / 2, nil
}

func TestRingPrefetch(t *testing.T) {
	if _, err := os.Stat(ShmDir); err != nil {
		t.Skip("no /dev/shm")
	}
	b := &cachingBackend{fileBackend: &fileBackend{files: map[uint64]*os.File{7: nil, 8: nil}, denied: map[uint64]bool{8: true}}}
	d := NewDaemon(b, 5*time.Second, nil)
	defer d.Close()
	mnt := withDaemon(t, d)
	ring, err := NewRing(mnt, 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ring.Close()
	for i, c := range []struct {
		name string
		f    File
		want int64
	}{
		{"fetched", File{7}, 1 << 19},
		{"no read access", File{8}, -int64(syscall.EACCES)},
		{"not open", File{9}, -int64(syscall.EBADF)},
	} {
		if err := ring.PrepPrefetch(c.f, 4096, 1<<20, uint64(i)); err != nil {
			t.Fatal(err)
		}
		ring.Submit()
		var cq [1]Completion
		if n, err := ring.Wait(cq[:], 1, 10*time.Second); err != nil || n != 1 {
			t.Fatalf("%s: wait %d, %v", c.name, n, err)
		}
		if cq[0].Result != c.want || cq[0].Userdata != uint64(i) {
			t.Fatalf("%s: %+v, want result %d", c.name, cq[0], c.want)
		}
	}
	b.amu.Lock()
	asked := b.asked
	b.amu.Unlock()
	if len(asked) != 2 || asked[0] != 4096 || asked[1] != 1<<20 {
		t.Fatalf("the backend was asked %v", asked)
	}
	if err := ring.PrepPrefetch(File{7}, 0, 65<<20, 0); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("a prefetch past the largest IO: %v", err)
	}
}
