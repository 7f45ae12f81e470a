package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The data files are accessed with positional I/O only (pread/pwrite through
// os.File, which is safe against a concurrent Close: it then fails with
// os.ErrClosed instead of touching a reused descriptor).

// isNoSpace reports whether err means the filesystem (or quota) is full.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// ioErr maps an OS error to the engine's sentinels where one applies.
func ioErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case isNoSpace(err):
		return fmt.Errorf("%s: %w: %w", op, ErrNoSpace, err)
	case errors.Is(err, os.ErrClosed):
		return fmt.Errorf("%s: %w", op, ErrClosed)
	}
	return fmt.Errorf("%s: %w: %w", op, ErrIO, err)
}

// preadFull reads exactly len(p) bytes at off. A file too short to hold them
// means the block lost data: that is corruption, reported as ErrChecksum.
func preadFull(f *os.File, p []byte, off int64) error {
	_, err := f.ReadAt(p, off)
	if err == nil {
		return nil
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: data file %s ends before offset %d", ErrChecksum, f.Name(), off+int64(len(p)))
	}
	return ioErr("read "+f.Name(), err)
}

func pwriteFull(f *os.File, p []byte, off int64) error {
	if _, err := f.WriteAt(p, off); err != nil {
		return ioErr("write "+f.Name(), err)
	}
	return nil
}

// pwriteZeros writes n zero bytes at off.
func pwriteZeros(f *os.File, off, n int64) error {
	for n > 0 {
		m := min(n, int64(len(zeros)))
		if err := pwriteFull(f, zeros[:m], off); err != nil {
			return err
		}
		off += m
		n -= m
	}
	return nil
}

// written makes a write just done to loc's data file durable before its
// record is committed: a shared fdatasync (syncgroup.go). A staged write
// (Update.Staged) is only counted, for Engine.Sync to cover.
func (e *Engine) written(loc blockLoc, c *change) error {
	d := e.alloc.dataFile(loc)
	if c.staged {
		d.syncs.wrote()
		return nil
	}
	if err := e.opts.Faults.check(OpSync, d.f.Name()); err != nil {
		return err
	}
	return d.syncs.writeDurable(func() error { return fdatasync(d.f) })
}

// syncStaged makes every staged write done to the data files before it
// durable: a sync of each file with writes not yet covered.
func (e *Engine) syncStaged() error {
	return e.alloc.eachFile(func(d *dataFile) error {
		if !d.syncs.pending() {
			return nil
		}
		if err := e.opts.Faults.check(OpSync, d.f.Name()); err != nil {
			return err
		}
		return d.syncs.sync(func() error { return fdatasync(d.f) })
	})
}

// stagedPending reports whether a staged write may be waiting for a sync.
func (e *Engine) stagedPending() bool {
	pending := false
	e.alloc.eachFile(func(d *dataFile) error {
		pending = pending || d.syncs.pending()
		return nil
	})
	return pending
}

// fdatasync flushes f's data (and the metadata needed to read it back).
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return ioErr("sync "+f.Name(), err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return ioErr("sync "+f.Name(), err)
	}
	return ioErr("sync "+f.Name(), serr)
}

// fallocate reserves [off, off+n) of f, extending its size. Filesystems
// without fallocate get a sparse extension instead (writes may then fail
// with ENOSPC later, which the engine handles the same way).
func fallocate(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return ioErr("fallocate "+f.Name(), err)
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Fallocate(int(fd), 0, off, n)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return ioErr("fallocate "+f.Name(), err)
	}
	if errors.Is(ferr, syscall.EOPNOTSUPP) || errors.Is(ferr, syscall.ENOSYS) {
		if st, err := f.Stat(); err == nil && st.Size() >= off+n {
			return nil
		}
		ferr = f.Truncate(off + n)
	}
	return ioErr("fallocate "+f.Name(), ferr)
}

// copyRange copies n bytes from src@srcOff to dst@dstOff inside the kernel
// (copy_file_range), falling back to a user-space copy through buf.
func copyRange(dst *os.File, dstOff int64, src *os.File, srcOff int64, n int64, buf []byte) error {
	if n <= 0 {
		return nil
	}
	done, err := copyFileRange(dst, dstOff, src, srcOff, n)
	if err == nil && done == n {
		return nil
	}
	if err != nil && !fallbackCopy(err) {
		return err
	}
	dstOff, srcOff, n = dstOff+done, srcOff+done, n-done
	for n > 0 {
		m := min(n, int64(len(buf)))
		if err := preadFull(src, buf[:m], srcOff); err != nil {
			return err
		}
		if err := pwriteFull(dst, buf[:m], dstOff); err != nil {
			return err
		}
		dstOff, srcOff, n = dstOff+m, srcOff+m, n-m
	}
	return nil
}

// fallbackCopy: errors after which a plain read/write copy is worth trying.
func fallbackCopy(err error) bool {
	return errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.ENOSYS) ||
		errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, errShortCopy)
}

var errShortCopy = errors.New("short copy")

func copyFileRange(dst *os.File, dstOff int64, src *os.File, srcOff int64, n int64) (int64, error) {
	drc, err := dst.SyscallConn()
	if err != nil {
		return 0, ioErr("copy", err)
	}
	src2, err := src.SyscallConn()
	if err != nil {
		return 0, ioErr("copy", err)
	}
	var done int64
	var cerr, sctlErr error
	ctlErr := drc.Control(func(dfd uintptr) {
		sctlErr = src2.Control(func(sfd uintptr) {
			for done < n {
				so, do := srcOff+done, dstOff+done
				m, err := unix.CopyFileRange(int(sfd), &so, int(dfd), &do, int(n-done), 0)
				if err == syscall.EINTR {
					continue
				}
				if err != nil {
					cerr = err
					return
				}
				if m == 0 { // source shorter than expected
					cerr = errShortCopy
					return
				}
				done += int64(m)
			}
		})
	})
	if ctlErr == nil {
		ctlErr = sctlErr
	}
	if ctlErr != nil {
		return done, ioErr("copy", ctlErr)
	}
	if cerr != nil && !fallbackCopy(cerr) {
		return done, ioErr(fmt.Sprintf("copy %s -> %s", src.Name(), dst.Name()), cerr)
	}
	return done, cerr
}
