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
// the CRCs of the content's 64 KiB units (u32 LE each). A disk keeps one CRC
// per segment of seg bytes (a power of two up to the unit); the units' CRCs
// are combined from them (crcShift), so the checksum is a function of the
// content alone: identical content gives an identical checksum on every
// replica, whatever the segment size of its disk.
func chunkChecksum(length uint32, crcs []uint32, seg int64) uint32 {
	var buf [256]byte
	binary.LittleEndian.PutUint32(buf[:4], length)
	n := 4
	c := uint32(0)
	per := int(unitSize / seg)
	for i := 0; i < len(crcs); i += per {
		u := crcs[i]
		for j := i + 1; j < min(i+per, len(crcs)); j++ {
			l := seg
			if j == len(crcs)-1 {
				l = int64(length) - int64(j)*seg
			}
			u = crcShift(u, l) ^ crcs[j]
		}
		if n == len(buf) {
			c = crcUpdate(c, buf[:n])
			n = 0
		}
		binary.LittleEndian.PutUint32(buf[n:], u)
		n += 4
	}
	return crcUpdate(c, buf[:n])
}

// ContentChecksum computes Meta.Checksum for the given content, as the engine
// would after storing it. Callers (e.g. replicas comparing content, tests) use
// it to check a checksum without an engine.
func ContentChecksum(content []byte) uint32 {
	crcs := make([]uint32, segCount(uint32(len(content)), unitSize))
	for i := range crcs {
		lo := i * unitSize
		crcs[i] = crc(content[lo:min(lo+unitSize, len(content))])
	}
	return chunkChecksum(uint32(len(content)), crcs, unitSize)
}
