package md5lanes

import (
	"crypto/md5"
	"encoding"
	"encoding/binary"
	"hash"
	"sync"
)

// One message alone is hashed by crypto/md5 where its run is long enough to
// pay for the hand-over: its assembly outruns our general-register kernel
// (on this project's machines 772 against 663 MB/s). Our state goes in and
// comes back out through crypto/md5's saved-state form (encoding's
// BinaryUnmarshaler and BinaryAppender): "md5\x01", the four state words
// big-endian, the 64-byte buffer, the length big-endian. Nothing is
// buffered (the length is a multiple of the block size), so the buffer is
// zeros.

const (
	stdMagic = "md5\x01"
	stdSize  = len(stdMagic) + 4*4 + blockSize + 8
	// stdMinBlocks: shorter runs stay on our kernel, where the hand-over
	// would cost more than it saves.
	stdMinBlocks = 64
)

var stdPool = sync.Pool{New: func() any { return md5.New() }}

// hashOne advances one message's state by the whole blocks of p: long runs
// in crypto/md5, the rest (and everything, should its saved-state form
// change) in this machine's one-message kernel.
func hashOne(s *[4]uint32, p []byte) {
	n := len(p) / blockSize
	if n >= stdMinBlocks && stdBlocks(s, p[:n*blockSize]) {
		return
	}
	kernelOne(s, p)
}

// stdBlocks advances s by p (whole blocks) with crypto/md5; false (s
// unchanged) if crypto/md5's saved state is not in the form above.
func stdBlocks(s *[4]uint32, p []byte) bool {
	h := stdPool.Get().(hash.Hash)
	defer stdPool.Put(h)
	var st [stdSize]byte
	copy(st[:], stdMagic)
	for i, w := range s {
		binary.BigEndian.PutUint32(st[len(stdMagic)+4*i:], w)
	}
	u, ok := h.(encoding.BinaryUnmarshaler)
	a, ok2 := h.(encoding.BinaryAppender)
	if !ok || !ok2 || u.UnmarshalBinary(st[:]) != nil {
		return false
	}
	h.Write(p)
	out, err := a.AppendBinary(st[:0])
	if err != nil || len(out) != stdSize || string(out[:len(stdMagic)]) != stdMagic {
		return false
	}
	for i := range s {
		s[i] = binary.BigEndian.Uint32(out[len(stdMagic)+4*i:])
	}
	return true
}
