package engine

import (
	"fmt"
	"math/bits"

	"github.com/flyfs/flyfs/core/layout"
)

const (
	// DefaultSegmentSize is the checksum granularity of a new disk: one
	// CRC32C per 4 KiB of content, so a 4 KiB read reads and verifies 4 KiB.
	// The CRCs stay in memory: 4 bytes per segment, 0.1% of the content.
	DefaultSegmentSize = 4 << 10
	// MinSegmentSize and MaxSegmentSize bound Options.SegmentSize (a power
	// of two); the largest is a disk of format 1's, which has no other.
	MinSegmentSize = 4 << 10
	MaxSegmentSize = unitSize
	// unitSize is the content unit of the chunk checksum (chunkChecksum).
	unitSize = 64 << 10
	// NumClasses is the number of block size classes: 64 KiB << 0..10.
	NumClasses = 11
	// MinBlockSize is the block size of class 0.
	MinBlockSize = 64 << 10
	// MaxChunkSize is the largest chunk size (and block size, class 10).
	MaxChunkSize = MinBlockSize << (NumClasses - 1)

	// filesPerClass is the fixed number of data files per size class. Blocks
	// of a class are spread over them; a growth of the class adds a share
	// of blocks to each.
	filesPerClass = 4

	// noClass marks a record without a block (an empty chunk).
	noClass = 0xFF
	// inlineClass marks a record whose content is inline (inline.go).
	inlineClass = 0xFE
	// MaxInline bounds an inline chunk's length; DefaultInlineMax is
	// Options.InlineMax's default.
	MaxInline        = MinBlockSize
	DefaultInlineMax = 16 << 10
)

// Key is the engine-wide identity of a chunk.
type Key struct {
	Chain uint32
	Chunk layout.ChunkID
}

func (k Key) String() string { return fmt.Sprintf("%d/%s", k.Chain, k.Chunk) }

// blockSize returns the block size of class c.
func blockSize(c uint8) int64 { return int64(MinBlockSize) << c }

// classFor returns the smallest class whose blocks hold n > 0 bytes
// (n <= MaxChunkSize), or noClass for n == 0.
func classFor(n uint32) uint8 {
	if n == 0 {
		return noClass
	}
	c := bits.Len32(n-1) - 16 // 64 KiB = 1<<16
	if c < 0 {
		c = 0
	}
	return uint8(c)
}

// className is the human readable block size of class c, used in file names.
func className(c uint8) string {
	s := blockSize(c)
	if s >= 1<<20 {
		return fmt.Sprintf("%dM", s>>20)
	}
	return fmt.Sprintf("%dK", s>>10)
}

// blockLoc is the physical location of a block: data file (class, file) and
// block index within that file. The byte offset is index * blockSize(class).
type blockLoc struct {
	class uint8
	file  uint8
	index uint32
	// iv is the block's IV on an encrypted disk (cipher.go), drawn at its
	// allocation; zero on a plain disk.
	iv [16]byte
}

func (l blockLoc) offset() int64 { return int64(l.index) * blockSize(l.class) }

// place is the block's place on disk, without its IV: two records at one
// place share a block whatever their IVs say.
func (l blockLoc) place() blockLoc { l.iv = [16]byte{}; return l }

func (l blockLoc) String() string {
	return fmt.Sprintf("%s.%d#%d", className(l.class), l.file, l.index)
}

// segCount is the number of checksum segments of seg bytes in n bytes of
// content.
func segCount(n uint32, seg int64) int { return int((int64(n) + seg - 1) / seg) }
