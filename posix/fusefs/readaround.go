package fusefs

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/flyfs/flyfs/core/client"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Read-around. The kernel sends a read of a page or two when the reads of a
// file look random; each then misses the page cache and costs a round trip
// to the cluster. When the file fits in memory several times over, the
// pages around such a read are likely to be read soon, so the mount reads
// the aligned window holding it (one storage read instead of one per page),
// answers the read from it and gives the rest of the window to the kernel's
// page cache (FUSE_NOTIFY_STORE). Later reads of those pages are page-cache
// hits. This is what a local file system's read-around does for a cold
// page; a file larger than Options.ReadAroundMaxFile is left alone, since
// its pages would be evicted before they are read.
//
// The stored pages must never be older than what the page cache would
// otherwise hold. A store therefore happens only if nothing that changes a
// file's content or drops its cache happened on this mount since the window
// was read: every such operation calls fence, which bumps the epoch after
// the stores in flight are done (they hold mu shared). A file with a write
// handle open here gets no read-around at all: the kernel may hold its
// dirty pages (a shared writable mapping), which a store would overwrite.

const (
	// readAroundMaxRead: larger reads are the kernel's read-ahead of a
	// sequential reader, which needs no help.
	readAroundMaxRead = 16 << 10
	// readAroundStores bounds the stores in flight; past it a window's rest
	// is dropped instead of queued. It is as deep as the kernel's queue of
	// background requests (MaxBackground): 16 threads reading at random
	// miss at once, and a window dropped is 15 more misses later (with 8,
	// fio's 16-thread random read sent the daemon a read for nearly every
	// page of the file).
	readAroundStores = 64
	pageSize         = 4 << 10
)

// cacheStorer hands bytes to the kernel's page cache of an inode: the
// FUSE server, or a recorder in tests.
type cacheStorer interface {
	InodeNotifyStoreCache(node uint64, offset int64, data []byte) fuse.Status
}

type readAround struct {
	window  int64 // bytes, a power of two; 0: off
	maxFile uint64

	mu    sync.RWMutex // held shared by a store, exclusively by fence
	epoch atomic.Uint64
	slots chan struct{}
	bufs  sync.Pool
}

// readAroundWindow turns Options.ReadAroundKB into a window in bytes: a
// power of two, at least a page; 0 for none.
func readAroundWindow(kb int) int64 {
	if kb <= 0 {
		return 0
	}
	w := int64(pageSize)
	for w*2 <= int64(kb)<<10 {
		w *= 2
	}
	return w
}

func newReadAround(window int64, maxFile uint64) *readAround {
	ra := &readAround{window: window, maxFile: maxFile, slots: make(chan struct{}, readAroundStores)}
	ra.bufs.New = func() any { b := make([]byte, window); return &b }
	return ra
}

// fence orders a change of content (or a drop of the page cache) after
// every store of a window read before it, and cancels the stores of windows
// read before it that have not started.
func (ra *readAround) fence() {
	if ra.window == 0 {
		return
	}
	ra.mu.Lock()
	ra.epoch.Add(1)
	ra.mu.Unlock()
}

// span returns the window of a read of size bytes at off in a file of
// fileSize bytes, or ok false when the read gets no read-around.
func (ra *readAround) span(off, size, fileSize uint64) (lo, hi uint64, ok bool) {
	if ra.window == 0 || size == 0 || size > readAroundMaxRead || off%pageSize != 0 || size%pageSize != 0 ||
		fileSize > ra.maxFile || fileSize <= uint64(ra.window) || off >= fileSize {
		return 0, 0, false
	}
	w := uint64(ra.window)
	lo = off &^ (w - 1)
	hi = min(lo+w, fileSize)
	if off+size > hi { // the read crosses the window's end
		return 0, 0, false
	}
	return lo, hi, true
}

// readAround answers a read of in.Size bytes at in.Offset from the window
// [lo, hi) and has the rest of the window stored in the page cache.
func (f *fileSystem) readAround(ctx context.Context, ino uint64, file *client.File, in *fuse.ReadIn, buf []byte, lo, hi uint64) (fuse.ReadResult, fuse.Status) {
	ra := f.ra
	epoch := ra.epoch.Load()
	bp := ra.bufs.Get().(*[]byte)
	win := (*bp)[:hi-lo]
	n, err := file.ReadAtContext(ctx, win, int64(lo))
	if err != nil && !errors.Is(err, io.EOF) {
		ra.bufs.Put(bp)
		return nil, f.status(ctx, "read", err)
	}
	win = win[:n]
	reqLo := min(in.Offset-lo, uint64(n))
	reqHi := min(reqLo+uint64(in.Size), uint64(n))
	m := copy(buf, win[reqLo:reqHi])
	if f.srv == nil {
		ra.bufs.Put(bp)
		return fuse.ReadResultData(buf[:m]), fuse.OK
	}
	ra.storeLater(f.srv, bp, ino, epoch, lo, win, reqLo, reqHi)
	return fuse.ReadResultData(buf[:m]), fuse.OK
}

// storeLater stores the window after the read's reply, when its own pages
// are unlocked, and then returns bp to the pool. It drops the window when
// readAroundStores stores are already in flight and reports whether it
// took it.
func (ra *readAround) storeLater(srv cacheStorer, bp *[]byte, ino, epoch, lo uint64, win []byte, reqLo, reqHi uint64) bool {
	select {
	case ra.slots <- struct{}{}:
		go func() {
			defer func() { <-ra.slots; ra.bufs.Put(bp) }()
			ra.store(srv, ino, epoch, lo, win, reqLo, reqHi)
		}()
		return true
	default:
		ra.bufs.Put(bp)
		return false
	}
}

// store gives the kernel the window's pages before and after the read
// [reqLo, reqHi) of it, unless a fence came after epoch. The read's own
// pages are left out: the kernel holds them locked until the reply.
func (ra *readAround) store(srv cacheStorer, ino, epoch, lo uint64, win []byte, reqLo, reqHi uint64) {
	ra.mu.RLock()
	defer ra.mu.RUnlock()
	if ra.epoch.Load() != epoch {
		return
	}
	if reqLo > 0 {
		srv.InodeNotifyStoreCache(ino, int64(lo), win[:reqLo])
	}
	if reqHi < uint64(len(win)) {
		srv.InodeNotifyStoreCache(ino, int64(lo+reqHi), win[reqHi:])
	}
}
