// Package layout maps files onto chunks and chains: chunk ids, striping, and
// chain selection.
package layout

import (
	"encoding/binary"
	"fmt"
)

// ChunkID names a chunk: the inode id and the chunk's index in the file, both
// big-endian, so one inode's chunks form one contiguous key range in order.
type ChunkID [16]byte

// MakeChunkID returns the id of chunk index of inode.
func MakeChunkID(inode, index uint64) ChunkID {
	var c ChunkID
	binary.BigEndian.PutUint64(c[:8], inode)
	binary.BigEndian.PutUint64(c[8:], index)
	return c
}

// Inode is the inode id part.
func (c ChunkID) Inode() uint64 { return binary.BigEndian.Uint64(c[:8]) }

// Index is the chunk index part.
func (c ChunkID) Index() uint64 { return binary.BigEndian.Uint64(c[8:]) }

func (c ChunkID) String() string { return fmt.Sprintf("%016x:%d", c.Inode(), c.Index()) }

// Next is the chunk id right after c in key order, for paging through a
// range from the last id seen.
func (c ChunkID) Next() ChunkID {
	for i := len(c) - 1; i >= 0; i-- {
		c[i]++
		if c[i] != 0 {
			break
		}
	}
	return c
}

// InodeChunks returns the range [first chunk of inode, first chunk of inode+1).
func InodeChunks(inode uint64) (begin, end ChunkID) {
	return MakeChunkID(inode, 0), MakeChunkID(inode+1, 0)
}
