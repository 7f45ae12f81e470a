package fusefs

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

func TestReadAroundWindow(t *testing.T) {
	for _, c := range []struct {
		kb   int
		want int64
	}{{-1, 0}, {0, 0}, {1, 4 << 10}, {4, 4 << 10}, {64, 64 << 10}, {100, 64 << 10}, {128, 128 << 10}} {
		if got := readAroundWindow(c.kb); got != c.want {
			t.Errorf("readAroundWindow(%d) = %d, want %d", c.kb, got, c.want)
		}
	}
}

func TestReadAroundSpan(t *testing.T) {
	const K = 1 << 10
	ra := newReadAround(64*K, 1<<30)
	for _, c := range []struct {
		name           string
		off, size, len uint64
		lo, hi         uint64
		ok             bool
	}{
		{"a page in the middle of a big file", 200 * K, 4 * K, 1 << 20, 192 * K, 256 * K, true},
		{"four pages at a window's start", 256 * K, 16 * K, 1 << 20, 256 * K, 320 * K, true},
		{"the window ends at the end of the file", 1000 * K, 4 * K, 1010 * K, 960 * K, 1010 * K, true},
		{"larger than the bound: the kernel's read-ahead", 0, 32 * K, 1 << 20, 0, 0, false},
		{"not page aligned", 100, 4 * K, 1 << 20, 0, 0, false},
		{"a partial page", 8 * K, 100, 1 << 20, 0, 0, false},
		{"crosses the window's end", 60 * K, 8 * K, 1 << 20, 0, 0, false},
		{"a file no larger than a window", 4 * K, 4 * K, 64 * K, 0, 0, false},
		{"a file too big to cache", 4 * K, 4 * K, 2 << 30, 0, 0, false},
		{"at or past the end", 1 << 20, 4 * K, 1 << 20, 0, 0, false},
		{"empty read", 4 * K, 0, 1 << 20, 0, 0, false},
	} {
		lo, hi, ok := ra.span(c.off, c.size, c.len)
		if ok != c.ok || lo != c.lo || hi != c.hi {
			t.Errorf("%s: span(%d, %d, %d) = [%d, %d) %v, want [%d, %d) %v", c.name, c.off, c.size, c.len, lo, hi, ok, c.lo, c.hi, c.ok)
		}
	}
	if _, _, ok := newReadAround(0, 1<<30).span(200*K, 4*K, 1<<20); ok {
		t.Error("a window of 0 turns read-around off")
	}
}

type storeCall struct {
	node   uint64
	offset int64
	data   string
}

type recorder struct{ calls []storeCall }

func (r *recorder) InodeNotifyStoreCache(node uint64, offset int64, data []byte) fuse.Status {
	r.calls = append(r.calls, storeCall{node, offset, string(data)})
	return fuse.OK
}

// TestReadAroundStore: the window's pages around the read are stored, the
// read's own are not (the kernel holds them locked until the reply), and a
// fence after the window was read cancels its store.
func TestReadAroundStore(t *testing.T) {
	ra := newReadAround(16, 1<<30)
	win := []byte("aaaabbbbccccdddd")

	var r recorder
	ra.store(&r, 7, ra.epoch.Load(), 100, win, 4, 8)
	want := []storeCall{{7, 100, "aaaa"}, {7, 108, "ccccdddd"}}
	if len(r.calls) != len(want) || r.calls[0] != want[0] || r.calls[1] != want[1] {
		t.Errorf("stored %v, want %v", r.calls, want)
	}

	r = recorder{}
	ra.store(&r, 7, ra.epoch.Load(), 100, win, 0, 4)
	if len(r.calls) != 1 || r.calls[0] != (storeCall{7, 104, "bbbbccccdddd"}) {
		t.Errorf("a read at the window's start: stored %v", r.calls)
	}

	r = recorder{}
	ra.store(&r, 7, ra.epoch.Load(), 100, win[:8], 4, 8)
	if len(r.calls) != 1 || r.calls[0] != (storeCall{7, 100, "aaaa"}) {
		t.Errorf("a read at the end of a short window: stored %v", r.calls)
	}

	r = recorder{}
	epoch := ra.epoch.Load()
	ra.fence()
	ra.store(&r, 7, epoch, 100, win, 4, 8)
	if len(r.calls) != 0 {
		t.Errorf("a window read before a fence was stored after it: %v", r.calls)
	}
}

// blockingStorer holds every store until release is closed, as the kernel
// does while a page of the window is locked by another read.
type blockingStorer struct {
	release chan struct{}
	stored  atomic.Int64
}

func (b *blockingStorer) InodeNotifyStoreCache(uint64, int64, []byte) fuse.Status {
	<-b.release
	b.stored.Add(1)
	return fuse.OK
}

// TestReadAroundConcurrentMisses: 16 threads reading a file at random miss
// at once; each miss's window is stored, none dropped while the stores
// before it are still waiting on the kernel.
func TestReadAroundConcurrentMisses(t *testing.T) {
	ra := newReadAround(16, 1<<30)
	s := &blockingStorer{release: make(chan struct{})}
	const readers = 16
	for i := range readers {
		bp := ra.bufs.Get().(*[]byte)
		win := (*bp)[:16]
		if !ra.storeLater(s, bp, 7, ra.epoch.Load(), uint64(i*16), win, 4, 8) {
			t.Fatalf("miss %d of %d concurrent misses: its window was dropped", i+1, readers)
		}
	}
	close(s.release)
	for s.stored.Load() != 2*readers {
		runtime.Gosched()
	}
	for len(ra.slots) != 0 { // every slot is given back
		runtime.Gosched()
	}
}
