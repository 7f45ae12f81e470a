package engine

import (
	"encoding/binary"
	"hash/crc32"
)

// castagnoli is the CRC32C table; hash/crc32 uses the SSE4.2/ARMv8 CRC
// instructions for it.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// crcUpdate continues a CRC32C: crcUpdate(crc(a), b) == crc(a||b). Appends use
// it to extend the last segment's CRC without reading the segment back.
func crcUpdate(c uint32, b []byte) uint32 { return crc32.Update(c, castagnoli, b) }

// zeros is a read-only zero buffer used to write holes and checksum them.
var zeros = make([]byte, 1<<20)

// chunkChecksum is Meta.Checksum: CRC32C over the length (u32 LE) followed by
// the segment CRCs (u32 LE each). Segment CRCs are a function of the content
// alone, so identical content gives an identical checksum on every replica.
func chunkChecksum(length uint32, crcs []uint32) uint32 {
	var buf [256]byte
	binary.LittleEndian.PutUint32(buf[:4], length)
	n := 4
	c := uint32(0)
	for _, s := range crcs {
		if n == len(buf) {
			c = crcUpdate(c, buf[:n])
			n = 0
		}
		binary.LittleEndian.PutUint32(buf[n:], s)
		n += 4
	}
	return crcUpdate(c, buf[:n])
}

// ContentChecksum computes Meta.Checksum for the given content, as the engine
// would after storing it. Callers (e.g. replicas comparing content, tests) use
// it to check a checksum without an engine.
func ContentChecksum(content []byte) uint32 {
	crcs := make([]uint32, segCount(uint32(len(content))))
	for i := range crcs {
		lo := i * SegmentSize
		crcs[i] = crc(content[lo:min(lo+SegmentSize, len(content))])
	}
	return chunkChecksum(uint32(len(content)), crcs)
}
