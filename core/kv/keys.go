package kv

import "bytes"

// KeyValue is one entry of a range read.
type KeyValue struct {
	Key   []byte
	Value []byte
}

// KeyRange is the half-open range [Begin, End). A nil End means "to the end of
// the key space".
type KeyRange struct {
	Begin []byte
	End   []byte
}

// Contains reports whether key lies in r.
func (r KeyRange) Contains(key []byte) bool {
	return bytes.Compare(key, r.Begin) >= 0 && (r.End == nil || bytes.Compare(key, r.End) < 0)
}

// Overlaps reports whether r and o share a key.
func (r KeyRange) Overlaps(o KeyRange) bool {
	return (o.End == nil || bytes.Compare(r.Begin, o.End) < 0) &&
		(r.End == nil || bytes.Compare(o.Begin, r.End) < 0)
}

// Empty reports whether r holds no key.
func (r KeyRange) Empty() bool {
	return r.End != nil && bytes.Compare(r.Begin, r.End) >= 0
}

// KeyAfter returns the first key after k in byte order: k + 0x00.
func KeyAfter(k []byte) []byte {
	out := make([]byte, len(k)+1)
	copy(out, k)
	return out
}

// PrefixEnd returns the first key that does not start with prefix, or nil (the
// end of the key space) when the prefix is all 0xff bytes.
func PrefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// PrefixRange returns the range of all keys that start with prefix.
func PrefixRange(prefix []byte) KeyRange {
	return KeyRange{Begin: bytes.Clone(prefix), End: PrefixEnd(prefix)}
}

// compareEnd compares two range ends, where nil is +infinity.
func compareEnd(a, b []byte) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return bytes.Compare(a, b)
}
