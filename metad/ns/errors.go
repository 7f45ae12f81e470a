package ns

import (
	"errors"
	"fmt"
	"syscall"
)

// Errno is a POSIX error number. Namespace errors wrap one, so callers test
// errors.Is(err, ns.ErrNotExist) (or errors.Is(err, syscall.ENOENT), or
// errors.Is(err, fs.ErrNotExist)) and map them to FUSE replies with Errno().
type Errno syscall.Errno

// The errors the namespace returns.
var (
	ErrNotExist    = Errno(syscall.ENOENT)
	ErrExist       = Errno(syscall.EEXIST)
	ErrNotDir      = Errno(syscall.ENOTDIR)
	ErrIsDir       = Errno(syscall.EISDIR)
	ErrNotEmpty    = Errno(syscall.ENOTEMPTY)
	ErrInvalid     = Errno(syscall.EINVAL)
	ErrNameTooLong = Errno(syscall.ENAMETOOLONG)
	ErrLoop        = Errno(syscall.ELOOP)
	ErrXDev        = Errno(syscall.EXDEV)
	ErrNoData      = Errno(syscall.ENODATA) // xattr missing
	ErrPerm        = Errno(syscall.EPERM)
	ErrMLink       = Errno(syscall.EMLINK)
	ErrBusy        = Errno(syscall.EBUSY)
	ErrTooBig      = Errno(syscall.E2BIG)
	ErrNotSup      = Errno(syscall.EOPNOTSUPP)
	ErrIO          = Errno(syscall.EIO) // inconsistent metadata
	// ErrPrecondition: a conditional change (IfIno/IfGen) found another
	// version of the entry.
	ErrPrecondition = Errno(syscall.ECANCELED)
	ErrFBig         = Errno(syscall.EFBIG)
	// ErrNoDevice: a special file opened for writing through flyfs (the
	// kernel, not flyfs, carries a fifo's, socket's or device's data).
	ErrNoDevice = Errno(syscall.ENXIO)
	// ErrReadOnly: a change inside a snapshot (snapshot.go).
	ErrReadOnly = Errno(syscall.EROFS)
	// ErrInlined: a write open of a file whose data is in its inode; the
	// data must move to chunks first (inline.go's Spilled).
	ErrInlined = Errno(syscall.EMEDIUMTYPE)
	// ErrNotInlined: a close that brought the file's data could not keep it
	// in the inode; the session stays open for the writer to write the data
	// to chunks and close again.
	ErrNotInlined = Errno(syscall.EAGAIN)
)

func (e Errno) Error() string { return syscall.Errno(e).Error() }

// Errno returns the system error number.
func (e Errno) Errno() syscall.Errno { return syscall.Errno(e) }

// Is matches the same syscall.Errno and, through it, the io/fs sentinels.
func (e Errno) Is(target error) bool {
	if t, ok := target.(syscall.Errno); ok {
		return t == syscall.Errno(e)
	}
	return syscall.Errno(e).Is(target)
}

// AsErrno extracts the Errno from err.
func AsErrno(err error) (Errno, bool) {
	var e Errno
	ok := errors.As(err, &e)
	return e, ok
}

// fail wraps e with what was being done.
func fail(e Errno, format string, args ...any) error {
	return fmt.Errorf("ns: %s: %w", fmt.Sprintf(format, args...), e)
}
