package layout

import (
	"fmt"
	"math"
)

// MaxPieces bounds how many chunk pieces one Split may return (1 Mi pieces is
// 64 GiB at the smallest chunk size), so a corrupt or hostile length cannot
// make the client allocate without limit. Larger I/O must be cut by the caller.
const MaxPieces = 1 << 20

// Piece is the part of an I/O range that falls in one chunk: bytes
// [OffsetInChunk, OffsetInChunk+Length) of chunk ChunkIndex correspond to
// bytes [OffsetInBuffer, OffsetInBuffer+Length) of the caller's buffer.
type Piece struct {
	ChunkIndex     uint64
	OffsetInChunk  uint32
	Length         uint32
	OffsetInBuffer uint64
}

// Split cuts the file range [offset, offset+length) into per-chunk pieces, in
// file order, so the client can issue them in parallel.
//
// Invariants of the result: pieces are non-empty, contiguous in the buffer
// (the first at 0, each starting where the previous ended, the last ending at
// length), never cross a chunk boundary, and lie in consecutive chunks. Only
// the first piece may start inside a chunk and only the last may end inside
// one. A zero length gives no pieces.
//
// Split fails for an invalid layout, a range whose end offset+length does not
// fit in a uint64 (the end becomes a file length), or more than MaxPieces
// pieces; it never panics.
func (l Layout) Split(offset, length uint64) ([]Piece, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if length == 0 {
		return nil, nil
	}
	if length > math.MaxUint64-offset {
		return nil, fmt.Errorf("%w: range at %d of %d bytes ends past 2^64-1", ErrLayout, offset, length)
	}
	cs := uint64(l.ChunkSize)
	first, last := offset/cs, (offset+length-1)/cs
	if n := last - first + 1; n > MaxPieces {
		return nil, fmt.Errorf("%w: range of %d bytes spans %d chunks, at most %d per split", ErrLayout, length, n, MaxPieces)
	}
	pieces := make([]Piece, 0, last-first+1)
	var done uint64
	for idx := first; ; idx++ {
		in := uint64(0)
		if idx == first {
			in = offset % cs
		}
		n := min(cs-in, length-done)
		pieces = append(pieces, Piece{ChunkIndex: idx, OffsetInChunk: uint32(in), Length: uint32(n), OffsetInBuffer: done})
		done += n
		if done == length {
			return pieces, nil
		}
	}
}
