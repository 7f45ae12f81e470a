package native

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Backend does the daemon's IOs. The mount implements it over its open
// files: an IO names a file by inode number and is served only while the
// file is open through the mount (for a write: open for writing).
type Backend interface {
	ReadAt(ctx context.Context, ino uint64, p []byte, off int64) (int, error)
	WriteAt(ctx context.Context, ino uint64, p []byte, off int64) (int, error)
	// Access checks once per ring and inode that the ring's owner may read
	// (or write) the inode; nil if so, an errno otherwise.
	Access(ctx context.Context, ino uint64, uid, gid uint32, write bool) error
}

// PrefetchBackend is a Backend with a cache to fill (OpPrefetch); without
// one, OpPrefetch fails with EOPNOTSUPP.
type PrefetchBackend interface {
	Backend
	// Prefetch fills the cache with [off, off+n) of the inode and returns
	// the bytes it fetched.
	Prefetch(ctx context.Context, ino uint64, off, n int64) (int64, error)
}

// Caller is who registered a buffer or a ring (from the FUSE request).
type Caller struct {
	UID, GID uint32
	PID      uint32 // the calling thread
}

// Entry is a registration as the virtual directory shows it.
type Entry struct {
	Name   string
	Target string
	UID    uint32
	GID    uint32
	Seq    uint64 // unique per registration, for inode numbers
	Time   time.Time
}

// readGroup is the reads of one file taken from a ring together.
type readGroup struct {
	ss  []sqe
	idx []uint32
}

// Daemon serves registered rings over a Backend.
type Daemon struct {
	b         Backend
	opTimeout time.Duration
	log       *slog.Logger

	mu     sync.RWMutex
	iovs   map[ID]*iovReg
	rings  map[ID]*ringReg
	seq    uint64
	closed bool
	wg     sync.WaitGroup
}

type iovReg struct {
	Entry
	m *mapped
	// IOs hold the read lock while they touch the buffer; deregistering
	// takes the write lock before unmapping.
	use sync.RWMutex
}

type ringReg struct {
	Entry
	m       *mapped
	r       *ring
	depth   int
	tgid    int
	stop    atomic.Bool
	done    chan struct{}
	cqMu    sync.Mutex
	cqTail  uint32
	id      ID
	access  sync.Map // accessKey -> error (nil: allowed)
	inflght sync.WaitGroup
}

type accessKey struct {
	ino   uint64
	write bool
}

// NewDaemon returns a daemon over b; every IO is bounded by opTimeout.
func NewDaemon(b Backend, opTimeout time.Duration, log *slog.Logger) *Daemon {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opTimeout <= 0 {
		opTimeout = time.Minute
	}
	return &Daemon{b: b, opTimeout: opTimeout, log: log, iovs: map[ID]*iovReg{}, rings: map[ID]*ringReg{}}
}

// parseName splits a registration name into its kind and id.
func parseName(name string) (prefix string, id ID, err error) {
	for _, p := range []string{IovPrefix, IorPrefix} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			id, err = ParseID(rest)
			return p, id, err
		}
	}
	return "", id, fmt.Errorf("native: %q is neither %s<id> nor %s<id>", name, IovPrefix, IorPrefix)
}

// Register maps the shm file target under name (a symlink name in the
// virtual directory). Errors are errnos, for the symlink call to return.
func (d *Daemon) Register(name, target string, c Caller) (Entry, error) {
	prefix, id, err := parseName(name)
	if err != nil {
		return Entry{}, syscall.EINVAL
	}
	// The target must be the same-named file directly in /dev/shm: the
	// daemon never maps a path a caller picked freely.
	if filepath.Clean(target) != filepath.Join(ShmDir, name) {
		return Entry{}, syscall.EINVAL
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return Entry{}, syscall.ENOTCONN
	}
	_, a := d.iovs[id]
	_, b := d.rings[id]
	d.seq++
	seq := d.seq
	d.mu.Unlock()
	if a || b {
		return Entry{}, syscall.EEXIST
	}
	e := Entry{Name: name, Target: target, UID: c.UID, GID: c.GID, Seq: seq, Time: time.Now()}
	if prefix == IovPrefix {
		m, err := openShm(target, c.UID, 1)
		if err != nil {
			return Entry{}, errnoOf(err)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.closed {
			m.close()
			return Entry{}, syscall.ENOTCONN
		}
		d.iovs[id] = &iovReg{Entry: e, m: m}
		return e, nil
	}
	m, err := openShm(target, c.UID, headerSize)
	if err != nil {
		return Entry{}, errnoOf(err)
	}
	r, depth, err := parseRing(m.mem)
	if err != nil {
		m.close()
		d.log.Info("native: ring refused", "name", name, "err", err)
		return Entry{}, syscall.EINVAL
	}
	rr := &ringReg{Entry: e, id: id, m: m, r: r, depth: depth, tgid: tgidOf(c.PID), done: make(chan struct{})}
	// The daemon owns the completion tail from here on; start it from what
	// the ring says so a re-registered ring keeps counting.
	rr.cqTail = r.load(offCQTail)
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		m.close()
		return Entry{}, syscall.ENOTCONN
	}
	d.rings[id] = rr
	d.wg.Add(1)
	d.mu.Unlock()
	r.store(offState, stateAttach)
	go d.serve(rr)
	return e, nil
}

// Deregister drops a registration, waiting for its IOs to finish.
func (d *Daemon) Deregister(name string) error {
	_, id, err := parseName(name)
	if err != nil {
		return syscall.ENOENT
	}
	d.mu.Lock()
	iov, isIov := d.iovs[id]
	rr, isRing := d.rings[id]
	delete(d.iovs, id)
	delete(d.rings, id)
	d.mu.Unlock()
	switch {
	case isIov:
		iov.use.Lock()
		iov.m.close()
		iov.use.Unlock()
	case isRing:
		rr.stop.Store(true)
		futexWakeAll(rr.r.u32(offSQTail))
		<-rr.done
	default:
		return syscall.ENOENT
	}
	return nil
}

// Lookup returns the registration called name.
func (d *Daemon) Lookup(name string) (Entry, bool) {
	_, id, err := parseName(name)
	if err != nil {
		return Entry{}, false
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if v, ok := d.iovs[id]; ok {
		return v.Entry, true
	}
	if r, ok := d.rings[id]; ok {
		return r.Entry, true
	}
	return Entry{}, false
}

// List returns every registration.
func (d *Daemon) List() []Entry {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]Entry, 0, len(d.iovs)+len(d.rings))
	for _, v := range d.iovs {
		out = append(out, v.Entry)
	}
	for _, r := range d.rings {
		out = append(out, r.Entry)
	}
	return out
}

// Close drops every registration; rings are marked detached so their
// clients stop waiting.
func (d *Daemon) Close() {
	d.mu.Lock()
	d.closed = true
	var names []string
	for _, v := range d.iovs {
		names = append(names, v.Name)
	}
	for _, r := range d.rings {
		names = append(names, r.Name)
	}
	d.mu.Unlock()
	// Rings first: their IOs may use the buffers.
	for _, n := range names {
		if strings.HasPrefix(n, IorPrefix) {
			d.Deregister(n)
		}
	}
	for _, n := range names {
		d.Deregister(n)
	}
	d.wg.Wait()
}

// serve runs one ring: it takes SQEs as the client publishes them, runs up
// to depth IOs at once and posts their completions.
func (d *Daemon) serve(rr *ringReg) {
	defer d.wg.Done()
	defer close(rr.done)
	r := rr.r
	head := r.load(offSQHead)
	sem := make(chan struct{}, rr.depth)
	lastAlive := time.Now()
	for !rr.stop.Load() {
		tail := r.load(offSQTail)
		if tail == head {
			if time.Since(lastAlive) > time.Second {
				lastAlive = time.Now()
				if rr.tgid > 0 && syscall.Kill(rr.tgid, 0) == syscall.ESRCH {
					// The owner died without deregistering.
					d.log.Info("native: ring owner exited; dropping its ring", "name", rr.Name, "pid", rr.tgid)
					break
				}
			}
			r.store(offSQWake, 1)
			if r.load(offSQTail) == head {
				futexWaitOn(r.u32(offSQTail), head, pollInterval*time.Millisecond)
			}
			r.store(offSQWake, 0)
			continue
		}
		if tail-head > r.entries {
			d.log.Info("native: ring tail is past its capacity; detaching it", "name", rr.Name)
			break
		}
		rb, batching := d.b.(ReadVBackend)
		if batching && tail-head > 1 {
			// Reads that arrived together go out per file as one ReadV:
			// their small pieces travel in a few RPCs instead of one each.
			groups := map[uint64]*readGroup{}
			var order []uint64
			for ; head != tail && !rr.stop.Load(); head++ {
				s := getSQE(r.sqeAt(head))
				idx := head & r.mask
				if s.op != OpRead {
					sem <- struct{}{}
					rr.inflght.Add(1)
					go func() {
						defer func() { <-sem; rr.inflght.Done() }()
						d.complete(rr, Completion{Result: d.do(rr, s), Userdata: s.userdata, Index: idx})
					}()
					continue
				}
				g := groups[s.ino]
				if g == nil {
					g = &readGroup{}
					groups[s.ino] = g
					order = append(order, s.ino)
				}
				g.ss, g.idx = append(g.ss, s), append(g.idx, idx)
			}
			r.store(offSQHead, head)
			for _, ino := range order {
				g := groups[ino]
				for len(g.ss) > 0 {
					n := min(len(g.ss), maxBatch)
					ss, idx := g.ss[:n], g.idx[:n]
					g.ss, g.idx = g.ss[n:], g.idx[n:]
					sem <- struct{}{}
					rr.inflght.Add(1)
					go func() {
						defer func() { <-sem; rr.inflght.Done() }()
						d.doReads(rr, rb, ino, ss, idx)
					}()
				}
			}
			continue
		}
		for ; head != tail && !rr.stop.Load(); head++ {
			s := getSQE(r.sqeAt(head))
			idx := head & r.mask
			sem <- struct{}{}
			r.store(offSQHead, head+1)
			rr.inflght.Add(1)
			go func() {
				defer func() { <-sem; rr.inflght.Done() }()
				res := d.do(rr, s)
				d.complete(rr, Completion{Result: res, Userdata: s.userdata, Index: idx})
			}()
		}
	}
	if !rr.stop.Load() {
		// Leaving on its own (owner gone, ring corrupt): drop the entry.
		d.mu.Lock()
		if d.rings[rr.id] == rr {
			delete(d.rings, rr.id)
		}
		d.mu.Unlock()
	}
	rr.inflght.Wait()
	r.store(offState, stateDetach)
	futexWakeAll(r.u32(offCQTail))
	rr.m.close()
}

// do runs one IO and returns its result: bytes or -errno.
func (d *Daemon) do(rr *ringReg, s sqe) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), d.opTimeout)
	defer cancel()
	if s.op == OpPrefetch {
		return d.prefetch(ctx, rr, s)
	}
	buf, release, res := d.prepare(ctx, rr, s)
	if release == nil {
		return res
	}
	defer release()
	var n int
	var err error
	if s.op == OpWrite {
		n, err = d.b.WriteAt(ctx, s.ino, buf, int64(s.fileOff))
	} else {
		n, err = d.b.ReadAt(ctx, s.ino, buf, int64(s.fileOff))
		if errors.Is(err, io.EOF) {
			err = nil // a short read at the end of the file
		}
	}
	if err != nil {
		return -int64(errnoOf(err))
	}
	return int64(n)
}

// prefetch runs one OpPrefetch: the owner must be allowed to read the file.
func (d *Daemon) prefetch(ctx context.Context, rr *ringReg, s sqe) int64 {
	pb, ok := d.b.(PrefetchBackend)
	if !ok {
		return -int64(syscall.EOPNOTSUPP)
	}
	if s.length > maxIOLen || s.fileOff > 1<<62 {
		return -int64(syscall.EINVAL)
	}
	if errno := d.checkAccess(ctx, rr, s.ino, false); errno != 0 {
		return -int64(errno)
	}
	n, err := pb.Prefetch(ctx, s.ino, int64(s.fileOff), int64(s.length))
	if err != nil {
		return -int64(errnoOf(err))
	}
	return n
}

// checkAccess checks, once per ring and inode, that the ring's owner may
// read (or write) the inode; 0 if so, else the errno.
func (d *Daemon) checkAccess(ctx context.Context, rr *ringReg, ino uint64, write bool) syscall.Errno {
	key := accessKey{ino, write}
	if v, ok := rr.access.Load(key); ok {
		if v != nil {
			return errnoOf(v.(error))
		}
		return 0
	}
	err := d.b.Access(ctx, ino, rr.UID, rr.GID, write)
	if err != nil {
		rr.access.Store(key, err)
		return errnoOf(err)
	}
	rr.access.Store(key, nil)
	return 0
}

// prepare checks one IO (op, bounds, access, buffer) and returns the
// buffer it reads into or writes from, with release to call after the IO;
// release is nil when the IO fails here, with res its -errno.
func (d *Daemon) prepare(ctx context.Context, rr *ringReg, s sqe) (buf []byte, release func(), res int64) {
	if s.op != OpRead && s.op != OpWrite {
		return nil, nil, -int64(syscall.EINVAL)
	}
	if s.length > maxIOLen {
		return nil, nil, -int64(syscall.EINVAL)
	}
	if s.fileOff > 1<<62 {
		return nil, nil, -int64(syscall.EINVAL)
	}
	if errno := d.checkAccess(ctx, rr, s.ino, s.op == OpWrite); errno != 0 {
		return nil, nil, -int64(errno)
	}
	d.mu.RLock()
	iov, ok := d.iovs[s.iov]
	if ok {
		iov.use.RLock()
	}
	d.mu.RUnlock()
	if !ok {
		return nil, nil, -int64(syscall.EBADF)
	}
	if iov.UID != rr.UID && rr.UID != 0 {
		iov.use.RUnlock()
		return nil, nil, -int64(syscall.EACCES) // another user's buffer
	}
	end := s.iovOff + uint64(s.length)
	if end < s.iovOff || end > uint64(len(iov.m.mem)) {
		iov.use.RUnlock()
		return nil, nil, -int64(syscall.EFAULT)
	}
	// A buffer truncated after registration would fault on access.
	if !iov.m.intact() {
		iov.use.RUnlock()
		return nil, nil, -int64(syscall.EFAULT)
	}
	return iov.m.mem[s.iovOff:end], iov.use.RUnlock, 0
}

// ReadVBackend is a Backend that can also read many ranges of one file in
// one call (client.File.ReadV batches their small pieces into one RPC per
// storage service). The daemon uses it for reads that arrive together.
type ReadVBackend interface {
	Backend
	ReadV(ctx context.Context, ino uint64, bufs [][]byte, offs []int64) ([]int, error)
}

// maxBatch bounds the reads of one file sent as one ReadV.
const maxBatch = 64

// doReads runs reads of one file as one ReadV and posts their completions.
func (d *Daemon) doReads(rr *ringReg, rb ReadVBackend, ino uint64, ss []sqe, idx []uint32) {
	ctx, cancel := context.WithTimeout(context.Background(), d.opTimeout)
	defer cancel()
	var bufs [][]byte
	var offs []int64
	var which []int
	var releases []func()
	for i, s := range ss {
		buf, release, res := d.prepare(ctx, rr, s)
		if release == nil {
			d.complete(rr, Completion{Result: res, Userdata: s.userdata, Index: idx[i]})
			continue
		}
		bufs, offs, which, releases = append(bufs, buf), append(offs, int64(s.fileOff)), append(which, i), append(releases, release)
	}
	if len(bufs) == 0 {
		return
	}
	ns, err := rb.ReadV(ctx, ino, bufs, offs)
	for _, r := range releases {
		r()
	}
	for k, i := range which {
		res := int64(0)
		if err != nil {
			res = -int64(errnoOf(err))
		} else {
			res = int64(ns[k])
		}
		d.complete(rr, Completion{Result: res, Userdata: ss[i].userdata, Index: idx[i]})
	}
}

// complete posts one completion and wakes a sleeping reaper.
func (d *Daemon) complete(rr *ringReg, c Completion) {
	r := rr.r
	rr.cqMu.Lock()
	putCQE(r.cqeAt(rr.cqTail), c)
	rr.cqTail++
	r.store(offCQTail, rr.cqTail)
	rr.cqMu.Unlock()
	if r.load(offCQWaiters) != 0 {
		futexWakeAll(r.u32(offCQTail))
	}
}

// errnoOf maps an error to the errno a completion carries.
func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	var ne *net.OpError
	switch {
	case errors.As(err, &ne): // the connection's errno, not the file's
		return syscall.EIO
	case errors.As(err, &e):
		return e
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return syscall.EIO
	case errors.Is(err, os.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, os.ErrPermission):
		return syscall.EACCES
	}
	return syscall.EIO
}

// tgidOf returns the process of a thread id (FUSE reports the thread).
func tgidOf(tid uint32) int {
	if tid == 0 {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Tgid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
