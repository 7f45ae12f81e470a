package engine

import "errors"

// Sentinel errors. Errors returned by the engine wrap exactly one of these
// (plus, where relevant, the underlying OS error), so callers test them with
// errors.Is.
var (
	// ErrNotFound: the chunk does not exist.
	ErrNotFound = errors.New("engine: chunk not found")
	// ErrChecksum: stored data or metadata does not match its checksum.
	// The corrupt bytes are never returned to the caller.
	ErrChecksum = errors.New("engine: checksum mismatch")
	// ErrNoSpace: the disk is full. Writes fail fast until space returns.
	ErrNoSpace = errors.New("engine: no space left on device")
	// ErrIO: the disk failed a read, write or sync of a data file (EIO and
	// the like). The engine turns read-only at once: a disk that fails once
	// is not trusted with writes again until an operator restarts it.
	ErrIO = errors.New("engine: disk I/O error")
	// ErrReadOnly: the engine refuses writes after a disk I/O error.
	ErrReadOnly = errors.New("engine: read-only")
	// ErrOutOfRange: an offset or length lies beyond the chunk size.
	ErrOutOfRange = errors.New("engine: out of range")
	// ErrChunkSizeMismatch: the update's chunk size differs from the chunk's.
	ErrChunkSizeMismatch = errors.New("engine: chunk size mismatch")
	// ErrInvalid: malformed request (bad flags, versions, sizes, released handle).
	ErrInvalid = errors.New("engine: invalid argument")
	// ErrClosed: the engine is closed.
	ErrClosed = errors.New("engine: closed")
)

func isChecksum(err error) bool { return errors.Is(err, ErrChecksum) }

// errWriteIO marks a failed write to a data file (other than ENOSPC), in
// Apply's own steps as well as in the data-file I/O: the disk is suspect, so
// the engine turns read-only.
var errWriteIO = errors.New("data write failed")
