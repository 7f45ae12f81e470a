package rpc

import (
	"math/bits"
	"sync"
)

// Large payloads are read into buffers from size-classed pools. Fresh memory
// is expensive on the data path: the allocator zeroes it, the kernel faults
// its pages in on first touch, and the garbage collector runs more often.
// Recycled buffers avoid all three, which is most of the difference between
// a naive RPC layer and a raw socket moving the same bytes.
//
// Recycling is opt-in and explicit, because a buffer returned to the pool
// while still referenced would be overwritten by a later read:
//   - a handler registered with BorrowPayload gives its request payload
//     back automatically once its response has been sent;
//   - a caller done with a response payload may give it back with
//     ReleasePayload.
// A payload nobody releases is simply garbage collected.

const (
	minPooledShift = 16 // 64 KiB: smaller payloads are cheap to allocate
	maxPooledShift = 26 // 64 MiB: DefaultMaxPayload
	minPooled      = 1 << minPooledShift
)

// bufPools[i] holds *[]byte of capacity 1<<(minPooledShift+i).
var bufPools [maxPooledShift - minPooledShift + 1]sync.Pool

// poolClass returns the pool index for a buffer of capacity c that is
// exactly a class size, or -1.
func poolClass(c int) int {
	if c < minPooled || c > 1<<maxPooledShift || c&(c-1) != 0 {
		return -1
	}
	return bits.Len(uint(c)) - 1 - minPooledShift
}

// getPayloadBuffer returns a buffer of length n, pooled if n is large. Its
// contents are arbitrary: the caller overwrites all of it.
func getPayloadBuffer(n int) []byte {
	if n < minPooled || n > 1<<maxPooledShift {
		return make([]byte, n)
	}
	c := 1 << bits.Len(uint(n-1)) // round up to a power of two
	if p, ok := bufPools[poolClass(c)].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, c)
}

// PayloadBuffer returns an n-byte buffer from the package's pool, for a
// handler registered with PooledResponse to fill and return as its payload.
func PayloadBuffer(n int) []byte { return getPayloadBuffer(n) }

// ReleasePayload gives a payload received from Call back to the package's
// buffer pool, so a later call can reuse its memory. It is optional (an
// unreleased payload is garbage collected) and only worth it for large
// payloads on hot paths. After ReleasePayload the caller must not touch b,
// or any slice sharing its memory, again. Buffers that did not come from the
// pool are ignored.
func ReleasePayload(b []byte) {
	k := poolClass(cap(b))
	if k < 0 {
		return
	}
	b = b[:cap(b)]
	bufPools[k].Put(&b)
}
