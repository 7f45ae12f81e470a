// Package native is flyfs's USRBIO-style asynchronous I/O API: a process
// shares a buffer (Iov) and a submission/completion ring (Ior) with the mount
// daemon through /dev/shm, registers both by creating symlinks in the mount's
// hidden /.flyfs directory, and then hands batches of reads and writes of
// files it opened through the mount to the daemon, which does them straight
// into or out of the shared buffer. RING.md documents the layout for other
// languages; this file is the single source of its numbers.
package native

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Names shared by the library and the daemon.
const (
	// VirtDir is the hidden directory at the mount's root that the daemon
	// serves itself: registrations are symlinks in it.
	VirtDir = ".flyfs"
	// ShmDir is where buffers and rings live.
	ShmDir = "/dev/shm"
	// IovPrefix / IorPrefix start the names of the shm files and of their
	// registration symlinks: "<prefix><32 hex digits>".
	IovPrefix = "flyfs-iov-"
	IorPrefix = "flyfs-ior-"
)

// Ring header: fixed offsets. Counters the two sides write sit on their own
// 64-byte lines so the producer and the consumer do not share a cache line.
const (
	ringMagic   = 0x524f4953_46594c46 // "FLYFSIOR" little-endian
	ringVersion = 1

	offMagic     = 0  // u64
	offVersion   = 8  // u32
	offEntries   = 12 // u32, power of two
	offIODepth   = 16 // u32, IOs of this ring the daemon runs at once
	offFlags     = 20 // u32, reserved (0)
	offSQEOff    = 24 // u32, byte offset of the SQE array
	offCQEOff    = 28 // u32, byte offset of the CQE array
	offSize      = 32 // u64, total ring size in bytes
	offState     = 40 // u32, daemon-written: 0 new, 1 attached, 2 detached
	offSQHead    = 64 // u32, daemon-written: SQEs consumed
	offSQTail    = 128 + 0
	offSQWake    = 128 + 4 // u32, daemon sets 1 before sleeping on SQTail
	offCQHead    = 192     // u32, client-written: CQEs reaped
	offCQTail    = 256     // u32, daemon-written: CQEs posted
	offCQWaiters = 256 + 4 // u32, client sets 1 before sleeping on CQTail
	headerSize   = 4096

	// SQE: 64 bytes.
	sqeSize      = 64
	sqeOp        = 0  // u8: OpRead / OpWrite / OpPrefetch
	sqeLen       = 4  // u32
	sqeIno       = 8  // u64: inode number (st_ino) of a file open through the mount
	sqeFileOff   = 16 // u64
	sqeIovOff    = 24 // u64: offset in the buffer
	sqeUserdata  = 32 // u64
	sqeIovID     = 40 // [16]byte
	sqeReserved  = 56
	cqeSize      = 32
	cqeResult    = 0  // i64: bytes done, or -errno
	cqeUserdata  = 8  // u64
	cqeIndex     = 16 // u32: the SQE slot
	maxEntries   = 1 << 16
	maxIOLen     = 64 << 20
	stateNew     = 0
	stateAttach  = 1
	stateDetach  = 2
	pollInterval = 100 // ms the daemon sleeps on an idle ring before re-checking it is still wanted
)

// Ops of an SQE.
const (
	OpRead  = 1
	OpWrite = 2
	// OpPrefetch fills the mount's cache with [file offset, +len) of the
	// file; no buffer. Its result is the bytes fetched from storage (the
	// rest of the range, cut at the file's end, was cached already).
	OpPrefetch = 3
)

// RingSize is the size in bytes of a ring with the given entries.
func RingSize(entries int) int { return headerSize + entries*(sqeSize+cqeSize) }

// ID names a buffer or a ring: 16 random bytes, written as 32 hex digits.
type ID [16]byte

func (id ID) String() string { return fmt.Sprintf("%x", id[:]) }

// ParseID reads 32 hex digits.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 32 {
		return id, errors.New("native: an id is 32 hex digits")
	}
	for i := range 16 {
		hi, lo := unhex(s[2*i]), unhex(s[2*i+1])
		if hi < 0 || lo < 0 {
			return id, errors.New("native: an id is 32 lower-case hex digits")
		}
		id[i] = byte(hi<<4 | lo)
	}
	return id, nil
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

// ring is a view of a mapped ring shared by both sides.
type ring struct {
	mem     []byte
	entries uint32
	mask    uint32
	sqeOff  int
	cqeOff  int
}

func (r *ring) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }

func (r *ring) load(off int) uint32     { return atomic.LoadUint32(r.u32(off)) }
func (r *ring) store(off int, v uint32) { atomic.StoreUint32(r.u32(off), v) }

// initRing writes a fresh header into mem.
func initRing(mem []byte, entries, ioDepth int) *ring {
	le := binary.LittleEndian
	clear(mem[:headerSize])
	le.PutUint32(mem[offVersion:], ringVersion)
	le.PutUint32(mem[offEntries:], uint32(entries))
	le.PutUint32(mem[offIODepth:], uint32(ioDepth))
	le.PutUint32(mem[offSQEOff:], headerSize)
	le.PutUint32(mem[offCQEOff:], uint32(headerSize+entries*sqeSize))
	le.PutUint64(mem[offSize:], uint64(len(mem)))
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&mem[offMagic])), ringMagic) // last: the header is complete
	return &ring{mem: mem, entries: uint32(entries), mask: uint32(entries - 1), sqeOff: headerSize, cqeOff: headerSize + entries*sqeSize}
}

// parseRing checks a header written by the other side. Everything in it is
// read once here: the client can change the shared header at any time, so
// the daemon keeps its own copy of the geometry.
func parseRing(mem []byte) (*ring, int, error) {
	le := binary.LittleEndian
	if len(mem) < headerSize {
		return nil, 0, errors.New("native: ring smaller than its header")
	}
	if atomic.LoadUint64((*uint64)(unsafe.Pointer(&mem[offMagic]))) != ringMagic {
		return nil, 0, errors.New("native: not a flyfs ring (bad magic)")
	}
	if v := le.Uint32(mem[offVersion:]); v != ringVersion {
		return nil, 0, fmt.Errorf("native: ring version %d, want %d", v, ringVersion)
	}
	entries := le.Uint32(mem[offEntries:])
	if entries == 0 || entries > maxEntries || entries&(entries-1) != 0 {
		return nil, 0, fmt.Errorf("native: ring entries %d: want a power of two up to %d", entries, maxEntries)
	}
	if int(le.Uint32(mem[offSQEOff:])) != headerSize || int(le.Uint32(mem[offCQEOff:])) != headerSize+int(entries)*sqeSize {
		return nil, 0, errors.New("native: ring array offsets do not match its entries")
	}
	if len(mem) < RingSize(int(entries)) {
		return nil, 0, fmt.Errorf("native: ring of %d bytes is too small for %d entries", len(mem), entries)
	}
	depth := int(le.Uint32(mem[offIODepth:]))
	if depth <= 0 || depth > int(entries) {
		depth = int(entries)
	}
	return &ring{mem: mem, entries: entries, mask: entries - 1, sqeOff: headerSize, cqeOff: headerSize + int(entries)*sqeSize}, depth, nil
}

// sqe is one decoded submission.
type sqe struct {
	op       uint8
	length   uint32
	ino      uint64
	fileOff  uint64
	iovOff   uint64
	userdata uint64
	iov      ID
}

func (r *ring) sqeAt(i uint32) []byte {
	o := r.sqeOff + int(i&r.mask)*sqeSize
	return r.mem[o : o+sqeSize]
}

func (r *ring) cqeAt(i uint32) []byte {
	o := r.cqeOff + int(i&r.mask)*cqeSize
	return r.mem[o : o+cqeSize]
}

func putSQE(b []byte, s sqe) {
	le := binary.LittleEndian
	clear(b)
	b[sqeOp] = s.op
	le.PutUint32(b[sqeLen:], s.length)
	le.PutUint64(b[sqeIno:], s.ino)
	le.PutUint64(b[sqeFileOff:], s.fileOff)
	le.PutUint64(b[sqeIovOff:], s.iovOff)
	le.PutUint64(b[sqeUserdata:], s.userdata)
	copy(b[sqeIovID:sqeIovID+16], s.iov[:])
}

func getSQE(b []byte) sqe {
	le := binary.LittleEndian
	s := sqe{op: b[sqeOp], length: le.Uint32(b[sqeLen:]), ino: le.Uint64(b[sqeIno:]),
		fileOff: le.Uint64(b[sqeFileOff:]), iovOff: le.Uint64(b[sqeIovOff:]), userdata: le.Uint64(b[sqeUserdata:])}
	copy(s.iov[:], b[sqeIovID:sqeIovID+16])
	return s
}

// Completion is one finished IO.
type Completion struct {
	// Result is the number of bytes read or written, or a negative errno.
	Result   int64
	Userdata uint64
	// Index is the submission slot.
	Index uint32
}

func putCQE(b []byte, c Completion) {
	le := binary.LittleEndian
	le.PutUint64(b[cqeResult:], uint64(c.Result))
	le.PutUint64(b[cqeUserdata:], c.Userdata)
	le.PutUint32(b[cqeIndex:], c.Index)
}

func getCQE(b []byte) Completion {
	le := binary.LittleEndian
	return Completion{Result: int64(le.Uint64(b[cqeResult:])), Userdata: le.Uint64(b[cqeUserdata:]), Index: le.Uint32(b[cqeIndex:])}
}
