package fusefs

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/flyfs/flyfs/core/client"
)

// maxCopyReply bounds one copy_file_range answer: the kernel's largest
// read or write (MAX_RW_COUNT).
const maxCopyReply = 0x7ffff000

// sharedCopy is a whole-file copy_file_range that a handle took by sharing
// chunks: its later calls (one reply carries at most maxCopyReply bytes)
// find the bytes there already.
type sharedCopy struct {
	src    uint64
	length uint64
}

// CopyFileRange is copy_file_range(2), which cp uses: a copy of a whole
// file into an empty one opened for writing here shares the source's
// chunks (client.File.ShareFrom; the new file takes its layout), so no byte
// is read or written. Any other copy answers EOPNOTSUPP, and the kernel or
// cp copies the bytes as it would without the call.
func (f *fileSystem) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	src, dst := f.handle(in.FhIn), f.handle(in.FhOut)
	if src == nil || dst == nil || !dst.write {
		return 0, fuse.EBADF
	}
	if in.Flags != 0 {
		return 0, fuse.EINVAL
	}
	if s := dst.shared.Load(); s != nil && s.src == src.ino && in.OffIn == in.OffOut {
		if in.OffIn >= s.length {
			return 0, fuse.OK
		}
		return uint32(min(s.length-in.OffIn, in.Len, maxCopyReply)), fuse.OK
	}
	unsupported := fuse.Status(syscall.EOPNOTSUPP)
	if in.OffIn != 0 || in.OffOut != 0 || src.ino == dst.ino {
		return 0, unsupported
	}
	ctx, done := f.ctx(cancel)
	defer done()
	if err := src.oi.q.drain(); err != nil {
		return 0, f.status(ctx, "write", err)
	}
	if f.writingNow(src.ino) {
		return 0, unsupported
	}
	sin, err := f.meta.Stat(ctx, src.ino)
	if err != nil {
		return 0, f.status(ctx, "copy_file_range", err)
	}
	if sin.Length == 0 || in.Len < sin.Length {
		return 0, unsupported
	}
	if err := dst.oi.q.drain(); err != nil {
		return 0, f.status(ctx, "write", err)
	}
	dst.mu.Lock()
	defer dst.mu.Unlock()
	if !dst.live.Load() || dst.dirty.Load() || f.localSize(dst.ino) != 0 {
		return 0, unsupported
	}
	file, err := dst.f.Load().ShareFrom(ctx, src.ino)
	switch client.Errno(err) {
	case 0:
	case syscall.EBUSY, syscall.EINVAL, syscall.EROFS, syscall.EPERM:
		return 0, unsupported // a writer on either side, or a file that must not change: copy the bytes
	default:
		return 0, f.status(ctx, "copy_file_range", err)
	}
	dst.f.Store(file)
	dst.dirty.Store(true) // the close ends the session and reports the length
	dst.shared.Store(&sharedCopy{src: src.ino, length: sin.Length})
	f.noteInode(file.Inode())
	return uint32(min(sin.Length, in.Len, maxCopyReply)), fuse.OK
}
