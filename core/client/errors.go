package client

import (
	"errors"
	"syscall"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// PathError wraps an errno with the operation and path, like os.PathError.
type PathError = fsPathError

type fsPathError struct {
	Op, Path string
	Err      error
}

func (e *fsPathError) Error() string { return e.Op + " " + e.Path + ": " + e.Err.Error() }
func (e *fsPathError) Unwrap() error { return e.Err }

func pathErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	if e := metaapi.Errno(err); e != 0 {
		err = e
	}
	return &fsPathError{Op: op, Path: p, Err: err}
}

// Errno extracts the POSIX errno an error carries (0 if none).
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if errors.Is(err, ErrNoSpace) {
		return syscall.ENOSPC
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return metaapi.Errno(err)
}

// ErrNoSpace: a write reached a storage target whose disk is full. Reads go
// on; writes to that chain fail so until space returns (files removed and
// collected, the disk grown), with no restart.
var ErrNoSpace = errors.New("client: no space left on a storage target of the chain")
