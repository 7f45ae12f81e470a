package engine

import (
	"encoding/binary"
	"fmt"
)

// Meta is the metadata of a chunk as seen by the replication layer.
type Meta struct {
	ChainVer  uint32 // chain version of the last update
	CommitVer uint32 // committed version
	UpdateVer uint32 // pending version; == CommitVer when nothing is pending
	Len       uint32 // bytes of content
	ChunkSize uint32 // the file's chunk size this chunk was created with: max Len
	Checksum  uint32 // checksum of the whole content (same content => same value on every replica)
}

// Pending reports whether an update is applied but not committed.
func (m Meta) Pending() bool { return m.UpdateVer != m.CommitVer }

// Pebble key space (1-byte prefixes):
//
//	'c' chain(u32 BE) chunk(16 B)  -> record
//	'i' chain(u32 BE) chunk(16 B)  -> an inline chunk's content (inline.go)
//	'v'                            -> format: version (u32 LE); version 2
//	                                  then the segment size (u32 LE),
//	                                  version 1 has 64 KiB segments
//	'k'                            -> key check value (encrypted disks: cipher.go)
const (
	prefixChunk = 'c'
	keyLen      = 1 + 4 + 16
	// formatLegacy is a disk of 64 KiB segments whose format value holds
	// the version alone.
	formatLegacy  = 1
	formatVersion = 2
)

var formatKey = []byte{'v'}

// encodeKey appends the Pebble key of k to dst. Keys sort by chain, then by
// chunk id, so a chain's chunks (and an inode's chunks) are contiguous.
func encodeKey(dst []byte, k Key) []byte {
	dst = append(dst, prefixChunk)
	dst = binary.BigEndian.AppendUint32(dst, k.Chain)
	return append(dst, k.Chunk[:]...)
}

func decodeKey(b []byte) (Key, bool) {
	var k Key
	if len(b) != keyLen || b[0] != prefixChunk {
		return k, false
	}
	k.Chain = binary.BigEndian.Uint32(b[1:5])
	copy(k.Chunk[:], b[5:])
	return k, true
}

// record is what Pebble stores for a chunk.
//
// Invariants (checked by decodeRecord, established by the writers):
//   - len(crcs) == segCount(meta.Len, seg), crcs[i] is the CRC32C of content
//     bytes [i*seg, min((i+1)*seg, Len)), seg the disk's segment size;
//   - meta.Checksum == chunkChecksum(meta.Len, crcs, seg);
//   - meta.Len == 0 <=> loc.class == noClass; otherwise Len <= blockSize(class),
//     or loc.class == inlineClass and Len <= MaxInline (the content is the
//     'i' value of the same chunk key: inline.go);
//   - 0 < ChunkSize <= MaxChunkSize, Len <= ChunkSize, CommitVer <= UpdateVer.
type record struct {
	meta Meta
	loc  blockLoc
	crcs []uint32
}

// Value layout (little-endian):
//
//	[0]      record format (1)
//	[1:25]   ChainVer CommitVer UpdateVer Len ChunkSize Checksum
//	[25]     class (noClass: no block)   [26] file   [27:31] block index
//	[31:n-4] segment CRCs
//	[n-4:n]  CRC32C of bytes [0:n-4], guards the record itself
const (
	recordHeader  = 31
	recordFormat1 = 1
	// recordFormat2 is format 1 with the block's IV (16 bytes) after the
	// block index: the records of an encrypted disk.
	recordFormat2 = 2
	recordHeader2 = recordHeader + 16
)

func (r *record) encode(dst []byte) []byte {
	encrypted := r.loc.iv != [16]byte{}
	if encrypted {
		dst = append(dst, recordFormat2)
	} else {
		dst = append(dst, recordFormat1)
	}
	m := &r.meta
	for _, v := range [...]uint32{m.ChainVer, m.CommitVer, m.UpdateVer, m.Len, m.ChunkSize, m.Checksum} {
		dst = binary.LittleEndian.AppendUint32(dst, v)
	}
	dst = append(dst, r.loc.class, r.loc.file)
	dst = binary.LittleEndian.AppendUint32(dst, r.loc.index)
	if encrypted {
		dst = append(dst, r.loc.iv[:]...)
	}
	for _, c := range r.crcs {
		dst = binary.LittleEndian.AppendUint32(dst, c)
	}
	return binary.LittleEndian.AppendUint32(dst, crc(dst))
}

// decodeRecord parses and validates a stored record. Any violation of the
// record invariants is reported as ErrChecksum: the metadata is corrupt.
// seg is the disk's segment size.
func decodeRecord(b []byte, seg int64) (record, error) {
	var r record
	header := recordHeader
	if len(b) > 0 && b[0] == recordFormat2 {
		header = recordHeader2
	}
	if len(b) < header+4 || (len(b)-header-4)%4 != 0 {
		return r, fmt.Errorf("%w: record length %d", ErrChecksum, len(b))
	}
	body := b[:len(b)-4]
	if got, want := crc(body), binary.LittleEndian.Uint32(b[len(b)-4:]); got != want {
		return r, fmt.Errorf("%w: record crc %08x != %08x", ErrChecksum, got, want)
	}
	if b[0] != recordFormat1 && b[0] != recordFormat2 {
		return r, fmt.Errorf("%w: unknown record format %d", ErrChecksum, b[0])
	}
	u := func(i int) uint32 { return binary.LittleEndian.Uint32(b[1+4*i:]) }
	r.meta = Meta{ChainVer: u(0), CommitVer: u(1), UpdateVer: u(2), Len: u(3), ChunkSize: u(4), Checksum: u(5)}
	r.loc = blockLoc{class: b[25], file: b[26], index: binary.LittleEndian.Uint32(b[27:31])}
	if header == recordHeader2 {
		copy(r.loc.iv[:], b[recordHeader:recordHeader2])
	}
	n := (len(body) - header) / 4
	r.crcs = make([]uint32, n)
	for i := range r.crcs {
		r.crcs[i] = binary.LittleEndian.Uint32(body[header+4*i:])
	}
	if err := r.validate(seg); err != nil {
		return record{}, err
	}
	return r, nil
}

func (r *record) validate(seg int64) error {
	m := &r.meta
	switch {
	case m.ChunkSize == 0 || m.ChunkSize > MaxChunkSize:
		return fmt.Errorf("%w: record chunk size %d", ErrChecksum, m.ChunkSize)
	case m.Len > m.ChunkSize:
		return fmt.Errorf("%w: record length %d > chunk size %d", ErrChecksum, m.Len, m.ChunkSize)
	case m.CommitVer > m.UpdateVer:
		return fmt.Errorf("%w: record commit version %d > update version %d", ErrChecksum, m.CommitVer, m.UpdateVer)
	case len(r.crcs) != segCount(m.Len, seg):
		return fmt.Errorf("%w: record has %d segment crcs for length %d", ErrChecksum, len(r.crcs), m.Len)
	case m.Checksum != chunkChecksum(m.Len, r.crcs, seg):
		return fmt.Errorf("%w: record checksum does not match its segments", ErrChecksum)
	}
	if m.Len == 0 {
		if r.loc.class != noClass {
			return fmt.Errorf("%w: empty chunk with a block", ErrChecksum)
		}
		return nil
	}
	if r.loc.class == inlineClass {
		if m.Len > MaxInline || r.loc.file != 0 || r.loc.index != 0 {
			return fmt.Errorf("%w: inline record of %d bytes at %v", ErrChecksum, m.Len, r.loc)
		}
		return nil
	}
	if r.loc.class >= NumClasses || r.loc.file >= filesPerClass || int64(m.Len) > blockSize(r.loc.class) {
		return fmt.Errorf("%w: record block %v cannot hold %d bytes", ErrChecksum, r.loc, m.Len)
	}
	return nil
}
