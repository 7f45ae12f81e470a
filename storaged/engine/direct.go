package engine

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Direct I/O. A large run of content of an update that asks for it
// (Update.Direct: a large S3 object's) goes to its data file through a
// second descriptor opened with O_DIRECT: straight to the disk, not through
// the page cache, whose pages cost more CPU to fill than the copy (on a
// virtual machine, 2.6 s per GiB against 0.1 s direct) and which such a
// block seldom needs soon (it is synced at once; a reader then reads it
// from the disk). A read that asks for it (Handle.ReadAtUncached: a large
// S3 object's GET) comes the same way: from a disk that reads 1 GiB/s
// through the page cache at a core's cost, direct reads take 2.5 GiB/s
// for almost none. The kernel keeps the two descriptors coherent: a direct
// write drops the cached pages of its range, a direct read first writes
// back the dirty ones. Only whole aligned pieces go direct (offset and
// length multiples of directAlign, through an aligned buffer); the rest, a
// file system that refuses O_DIRECT (tmpfs) or an I/O it refuses (EINVAL),
// goes through the page cache as before.

// directAlign is the alignment O_DIRECT needs of offsets, lengths and
// buffers on the file systems we run on (their logical block size or less).
const directAlign = 4096

// directMin is the smallest run written or read direct: below it the page
// cache's cost does not matter, and small pieces would only add syscalls.
const directMin = 256 << 10

// directPiece is the size of the aligned buffers a run is copied through
// when its own memory is not aligned.
const directPiece = 1 << 20

// directFile is a data file's O_DIRECT descriptor.
type directFile struct {
	f     *os.File
	off   atomic.Bool  // the file system refused a direct I/O: never again
	wrote atomic.Int64 // bytes written direct (tests)
	readN atomic.Int64 // bytes read direct (tests)
}

// openDirect opens name for direct I/O, or returns nil where the file
// system does not allow it.
func openDirect(name string) *directFile {
	f, err := os.OpenFile(name, os.O_RDWR|syscall.O_DIRECT, 0)
	if err != nil {
		return nil
	}
	return &directFile{f: f}
}

func (d *directFile) close() error {
	if d == nil {
		return nil
	}
	return d.f.Close()
}

var directBufs = sync.Pool{New: func() any {
	b := alignedBuffer(directPiece)
	return &b
}}

// alignedBuffer returns n bytes starting at a directAlign boundary.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+directAlign)
	skip := (directAlign - int(uintptr(unsafe.Pointer(&b[0]))%directAlign)) % directAlign
	return b[skip : skip+n : skip+n]
}

func aligned(p []byte) bool { return uintptr(unsafe.Pointer(&p[0]))%directAlign == 0 }

// write writes the longest aligned head of p at off (a file offset)
// through d and returns how many bytes it wrote; the caller writes the rest
// through the page cache. 0 means nothing went direct.
func (d *directFile) write(p []byte, off int64) (int, error) { return d.move(p, off, true) }

// read fills the longest aligned head of p with the file's bytes from off
// (a file offset) through d and returns how many bytes it read; the caller
// reads the rest through the page cache. 0 means nothing came direct.
func (d *directFile) read(p []byte, off int64) (int, error) { return d.move(p, off, false) }

// move is write (toFile) or read: pieces of p whose memory is not aligned
// go through a pooled aligned buffer.
func (d *directFile) move(p []byte, off int64, toFile bool) (int, error) {
	if d == nil || d.off.Load() || len(p) < directMin || off%directAlign != 0 {
		return 0, nil
	}
	n := len(p) &^ (directAlign - 1)
	done := 0
	for done < n {
		piece := p[done:n]
		var bp *[]byte
		if !aligned(piece) {
			bp = directBufs.Get().(*[]byte)
			piece = (*bp)[:min(len(piece), directPiece)]
			if toFile {
				copy(piece, p[done:])
			}
		}
		var k int
		var err error
		if toFile {
			k, err = d.f.WriteAt(piece, off+int64(done))
			d.wrote.Add(int64(k))
		} else {
			k, err = d.f.ReadAt(piece, off+int64(done))
			d.readN.Add(int64(k))
			if bp != nil {
				copy(p[done:done+k], piece[:k])
			}
		}
		if bp != nil {
			directBufs.Put(bp)
		}
		done += k
		switch {
		case err == nil:
		case !toFile && errors.Is(err, io.EOF): // a short file: the page cache path says what is wrong
			return done, nil
		case errors.Is(err, syscall.EINVAL) && k == 0:
			d.off.Store(true) // not for this file system: the page cache from now on
			return done, nil
		case toFile:
			return done, ioErr("write "+d.f.Name(), err)
		default:
			return done, ioErr("read "+d.f.Name(), err)
		}
	}
	return done, nil
}
