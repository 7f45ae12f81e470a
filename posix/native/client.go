package native

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Errors of the client library.
var (
	// ErrRingFull: as many IOs are in flight (prepared and not yet reaped)
	// as the ring has entries; reap some with Wait first.
	ErrRingFull = fmt.Errorf("native: ring full: %w", syscall.EAGAIN)
	// ErrDetached: the daemon dropped the ring (deregistered or unmounted).
	ErrDetached = errors.New("native: the mount daemon detached the ring")
)

// register creates a registration symlink; the daemon maps the target while
// it handles the call. Tests of the ring without a mount replace it.
var (
	register   = os.Symlink
	deregister = os.Remove
)

// Iov is a buffer in /dev/shm registered with a mount's daemon. Reads land
// in Buf and writes are taken from it, with no copy through the kernel.
type Iov struct {
	ID  ID
	Buf []byte

	shm, link string
}

// NewIov creates a size-byte buffer and registers it with the daemon of the
// flyfs mount at mount.
func NewIov(mount string, size int) (*Iov, error) {
	id := newID()
	name := IovPrefix + id.String()
	mem, shm, err := createShm(name, size)
	if err != nil {
		return nil, err
	}
	link := filepath.Join(mount, VirtDir, name)
	if err := register(shm, link); err != nil {
		syscall.Munmap(mem)
		os.Remove(shm)
		return nil, fmt.Errorf("native: register buffer with %s: %w", mount, err)
	}
	return &Iov{ID: id, Buf: mem, shm: shm, link: link}, nil
}

// Close deregisters the buffer (the daemon waits for IOs on it to finish)
// and frees it.
func (v *Iov) Close() error {
	err := deregister(v.link)
	syscall.Munmap(v.Buf)
	v.Buf = nil
	if rerr := os.Remove(v.shm); err == nil {
		err = rerr
	}
	return err
}

// File names a file for the ring: the inode number of a file the process
// opened through the mount. The daemon serves an IO only while the file is
// open through the mount, and a write only while it is open for writing.
type File struct{ Ino uint64 }

// FileOf returns the ring's name for f, which must be open on the mount.
func FileOf(mount string, f *os.File) (File, error) {
	var st, mst syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return File{}, err
	}
	if err := syscall.Stat(mount, &mst); err != nil {
		return File{}, err
	}
	if st.Dev != mst.Dev {
		return File{}, fmt.Errorf("native: %s is not on the mount %s: %w", f.Name(), mount, syscall.EXDEV)
	}
	return File{Ino: st.Ino}, nil
}

// Ring is a submission/completion ring registered with a mount's daemon.
// One goroutine may prepare and submit while another waits: preparing and
// reaping are each serialised by their own lock.
type Ring struct {
	r          *ring
	ID         ID
	shm, link  string
	entries    uint32
	pmu        sync.Mutex
	tail       uint32 // next SQE slot (published on Submit)
	wmu        sync.Mutex
	head       uint32 // next CQE to reap
	reapedSeen uint32 // head as seen by the producer side, for the full check
	hmu        sync.Mutex
}

// NewRing creates a ring of entries slots (rounded up to a power of two)
// on which the daemon runs up to ioDepth IOs at once (0: entries).
func NewRing(mount string, entries, ioDepth int) (*Ring, error) {
	if entries <= 0 || entries > maxEntries {
		return nil, fmt.Errorf("native: entries %d out of range 1..%d", entries, maxEntries)
	}
	n := 1
	for n < entries {
		n <<= 1
	}
	if ioDepth <= 0 || ioDepth > n {
		ioDepth = n
	}
	id := newID()
	name := IorPrefix + id.String()
	mem, shm, err := createShm(name, RingSize(n))
	if err != nil {
		return nil, err
	}
	r := initRing(mem, n, ioDepth)
	link := filepath.Join(mount, VirtDir, name)
	if err := register(shm, link); err != nil {
		syscall.Munmap(mem)
		os.Remove(shm)
		return nil, fmt.Errorf("native: register ring with %s: %w", mount, err)
	}
	if r.load(offState) != stateAttach {
		deregister(link)
		syscall.Munmap(mem)
		os.Remove(shm)
		return nil, fmt.Errorf("native: %s did not attach the ring (not a flyfs mount?)", mount)
	}
	return &Ring{r: r, ID: id, shm: shm, link: link, entries: uint32(n)}, nil
}

// Entries is the ring's capacity: the most IOs in flight at once.
func (r *Ring) Entries() int { return int(r.entries) }

// PrepRead queues a read of n bytes at fileOff of f into iov.Buf[bufOff:].
// It is sent to the daemon by Submit (the daemon may start it earlier).
func (r *Ring) PrepRead(iov *Iov, bufOff, n int, f File, fileOff int64, userdata uint64) error {
	return r.prep(OpRead, iov, bufOff, n, f, fileOff, userdata)
}

// PrepWrite queues a write of iov.Buf[bufOff:bufOff+n] at fileOff of f.
func (r *Ring) PrepWrite(iov *Iov, bufOff, n int, f File, fileOff int64, userdata uint64) error {
	return r.prep(OpWrite, iov, bufOff, n, f, fileOff, userdata)
}

// PrepPrefetch queues a fill of the mount's cache with n bytes at fileOff
// of f (a data loader warming what it reads next). Its completion's result
// is the bytes fetched from storage; the rest of the range (cut at the
// file's end) was cached already. A mount without a cache fails it with
// -EOPNOTSUPP.
func (r *Ring) PrepPrefetch(f File, fileOff int64, n int, userdata uint64) error {
	return r.prep(OpPrefetch, nil, 0, n, f, fileOff, userdata)
}

func (r *Ring) prep(op uint8, iov *Iov, bufOff, n int, f File, fileOff int64, userdata uint64) error {
	var id ID
	if iov != nil {
		if bufOff < 0 || bufOff+n > len(iov.Buf) {
			return fmt.Errorf("native: io [%d,+%d) outside the %d-byte buffer: %w", bufOff, n, len(iov.Buf), syscall.EINVAL)
		}
		id = iov.ID
	}
	if n < 0 || n > maxIOLen || fileOff < 0 {
		return fmt.Errorf("native: io of %d bytes at file offset %d: %w", n, fileOff, syscall.EINVAL)
	}
	r.pmu.Lock()
	defer r.pmu.Unlock()
	r.hmu.Lock()
	reaped := r.reapedSeen
	r.hmu.Unlock()
	if r.tail-reaped >= r.entries {
		return ErrRingFull
	}
	putSQE(r.r.sqeAt(r.tail), sqe{op: op, length: uint32(n), ino: f.Ino, fileOff: uint64(fileOff), iovOff: uint64(bufOff), userdata: userdata, iov: id})
	r.tail++
	// The daemon polls the tail, so publishing right away lets it start
	// early; Submit only wakes it if it sleeps.
	r.r.store(offSQTail, r.tail)
	return nil
}

// Submit wakes the daemon for the IOs prepared so far.
func (r *Ring) Submit() {
	if r.r.load(offSQWake) != 0 {
		futexWakeAll(r.r.u32(offSQTail))
	}
}

// Wait reaps completions into out: it returns once at least want are
// available (clamped to the IOs in flight and to len(out)) or timeout
// passes (timeout <= 0: no limit), with every completion available then, up
// to len(out).
func (r *Ring) Wait(out []Completion, want int, timeout time.Duration) (int, error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	r.pmu.Lock()
	inflight := int(r.tail - r.head)
	r.pmu.Unlock()
	want = max(0, minOf(want, inflight, len(out)))
	lastCheck := time.Now()
	for {
		tail := r.r.load(offCQTail)
		if avail := int(tail - r.head); avail >= want && (avail > 0 || want == 0) {
			n := minOf(avail, len(out))
			for i := range n {
				out[i] = getCQE(r.r.cqeAt(r.head + uint32(i)))
			}
			r.head += uint32(n)
			r.r.store(offCQHead, r.head)
			r.hmu.Lock()
			r.reapedSeen = r.head
			r.hmu.Unlock()
			return n, nil
		}
		if r.r.load(offState) == stateDetach {
			return 0, ErrDetached
		}
		wait := 100 * time.Millisecond
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return 0, nil
			}
			wait = min(wait, left)
		}
		// A daemon that died cannot mark the ring detached: check the
		// registration is still there now and then.
		if time.Since(lastCheck) > time.Second {
			lastCheck = time.Now()
			if _, err := os.Lstat(r.link); err != nil {
				return 0, fmt.Errorf("%w: %v", ErrDetached, err)
			}
		}
		r.r.store(offCQWaiters, 1)
		if r.r.load(offCQTail) == tail {
			futexWaitOn(r.r.u32(offCQTail), tail, wait)
		}
		r.r.store(offCQWaiters, 0)
	}
}

func minOf(a int, b ...int) int {
	for _, x := range b {
		a = min(a, x)
	}
	return a
}

// Close deregisters the ring (the daemon finishes the IOs it started) and
// frees it.
func (r *Ring) Close() error {
	err := deregister(r.link)
	syscall.Munmap(r.r.mem)
	if rerr := os.Remove(r.shm); err == nil {
		err = rerr
	}
	return err
}
