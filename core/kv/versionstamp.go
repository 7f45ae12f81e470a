package kv

import "encoding/binary"

// StampLen is the length of a versionstamp: the 8-byte big-endian commit version
// followed by a 2-byte big-endian order, as in FoundationDB. Stamps grow with
// commit order, and every op of one transaction gets the same stamp; a caller that
// stamps several keys in one transaction tells them apart with its own suffix.
const StampLen = 10

// StampedOp is a Set whose key or value gets the commit's versionstamp written
// over StampLen bytes at Offset.
type StampedOp struct {
	Key, Value []byte
	InKey      bool // the stamp goes into the key (else into the value)
	Offset     int
}

// Resolve returns the op's key and value with stamp written in.
func (op StampedOp) Resolve(stamp []byte) (key, value []byte) {
	key, value = op.Key, op.Value
	if op.InKey {
		key = append([]byte(nil), key...)
		copy(key[op.Offset:], stamp)
	} else {
		value = append([]byte(nil), value...)
		copy(value[op.Offset:], stamp)
	}
	return key, value
}

// MakeStamp encodes a commit version (and order) as a versionstamp.
func MakeStamp(version int64, order uint16) []byte {
	b := make([]byte, StampLen)
	binary.BigEndian.PutUint64(b, uint64(version))
	binary.BigEndian.PutUint16(b[8:], order)
	return b
}

// StampVersion decodes the commit version from a versionstamp.
func StampVersion(stamp []byte) int64 {
	if len(stamp) < 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(stamp))
}
