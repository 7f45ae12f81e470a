package ns

import (
	"encoding/binary"
	"fmt"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/fxamacker/cbor/v2"
)

// RootID is the root directory's inode id.
const RootID uint64 = 1

// Key tags (4 bytes each, see doc.go).
var (
	tagInode     = kv.Tag("INOD")
	tagDentry    = kv.Tag("DENT")
	tagIdem      = kv.Tag("IDEM")
	tagGC        = kv.Tag("GCQU")
	tagAlloc     = kv.Tag("IALC")
	tagSession   = kv.Tag("SESS")
	tagXattr     = kv.Tag("XATR")
	tagDirTime   = kv.Tag("DMTI")
	tagInline    = kv.Tag("INLN")
	keyStatBase  = kv.Tag("STAB")
	tagStatDelta = kv.Tag("STAD")
)

// Inode ids are little-endian in every key (INOD, DENT, SESS, XATR, DMTI):
// ids are handed out in consecutive batches, so big-endian keys would put the
// inodes, and the directory listings, of everything one metad created lately
// into one key range, i.e. one shard of a range-partitioned store (FoundationDB,
// etcd's bbolt pages). Little-endian spreads them; every prefix stays
// fixed-width, so a directory's entries are still one contiguous range sorted by
// name. Nothing needs numeric order of ids (fsck reads everything anyway).
func putID(b []byte, id uint64) []byte { return binary.LittleEndian.AppendUint64(b, id) }

func withTag(tag []byte, n int) []byte {
	b := make([]byte, 0, len(tag)+n)
	return append(b, tag...)
}

func inodeKey(ino uint64) []byte { return putID(withTag(tagInode, 8), ino) }

func dentryPrefix(parent uint64) []byte { return putID(withTag(tagDentry, 8), parent) }

func dentryKey(parent uint64, name string) []byte {
	return append(putID(withTag(tagDentry, 8+len(name)), parent), name...)
}

func idemKey(req RequestID) []byte { return append(withTag(tagIdem, 16), req[:]...) }

func allocKey(shard int) []byte { return append(withTag(tagAlloc, 1), byte(shard)) }

func sessionPrefix(ino uint64) []byte { return putID(withTag(tagSession, 8), ino) }

func sessionKey(ino uint64, id SessionID) []byte { return append(sessionPrefix(ino), id[:]...) }

func xattrPrefix(ino uint64) []byte { return putID(withTag(tagXattr, 8), ino) }

func xattrKey(ino uint64, name string) []byte { return append(xattrPrefix(ino), name...) }

func inlineKey(ino uint64) []byte { return putID(withTag(tagInline, 8), ino) }

func dirTimeKey(dir uint64) []byte { return putID(withTag(tagDirTime, 8), dir) }

// GC queue keys: kind, then a shard so several GC workers start at different
// places, then the removal time big-endian so each (kind, shard) range is in
// time order and "due" is a prefix of it.
const gcShards = 16

type gcKind byte

const (
	gcDir  gcKind = 'd' // detached directory: expand its children
	gcFile gcKind = 'f' // file whose chunks are to be deleted
)

func gcRange(kind gcKind, shard int) []byte {
	return append(withTag(tagGC, 2), byte(kind), byte(shard))
}

func gcKey(kind gcKind, ino uint64, at int64) []byte {
	b := gcRange(kind, int(ino%gcShards))
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	return putID(b, ino)
}

// gcDue is the end of the entries of (kind, shard) removed before at.
func gcDue(kind gcKind, shard int, at int64) []byte {
	return binary.BigEndian.AppendUint64(gcRange(kind, shard), uint64(max(at, 0)))
}

func prefixEnd(p []byte) []byte { return kv.PrefixEnd(p) }

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	if encMode, err = (cbor.EncOptions{}).EncMode(); err != nil {
		panic(err)
	}
	if decMode, err = (cbor.DecOptions{}).DecMode(); err != nil {
		panic(err)
	}
}

func encode(v any) []byte {
	b, err := encMode.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("ns: encode %T: %v", v, err)) // only plain structs are encoded
	}
	return b
}

func decode(b []byte, v any) error {
	if err := decMode.Unmarshal(b, v); err != nil {
		return fmt.Errorf("ns: decode %T: %w (%w)", v, err, ErrIO)
	}
	return nil
}
