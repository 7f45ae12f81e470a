package md5lanes

import (
	"crypto/md5"
	"encoding/binary"
	"hash"
)

// minLaneWrite is the least a Write hands to the lanes: below it the
// hand-off costs more than hashing in place.
const minLaneWrite = 64 << 10

// digest is one message's MD5. Whole runs of blocks of minLaneWrite or more
// go to the server's lanes; the rest is hashed here.
type digest struct {
	srv   *Server
	s     [4]uint32
	buf   [blockSize]byte
	nbuf  int
	total uint64
}

var _ hash.Hash = (*digest)(nil)

// New returns an MD5 whose large writes are hashed in the server's lanes
// beside other messages'. It gives crypto/md5's sums.
func (srv *Server) New() hash.Hash {
	d := &digest{srv: srv}
	d.Reset()
	return d
}

func (d *digest) Reset() {
	d.s, d.nbuf, d.total = initState, 0, 0
}

func (d *digest) Size() int      { return md5.Size }
func (d *digest) BlockSize() int { return blockSize }

func (d *digest) Write(p []byte) (int, error) {
	n := len(p)
	d.total += uint64(n)
	if d.nbuf > 0 {
		k := copy(d.buf[d.nbuf:], p)
		d.nbuf += k
		p = p[k:]
		if d.nbuf < blockSize {
			return n, nil
		}
		hashOne(&d.s, d.buf[:])
		d.nbuf = 0
	}
	if whole := len(p) &^ (blockSize - 1); whole > 0 {
		if whole >= minLaneWrite && d.srv != nil {
			d.srv.hashLarge(&d.s, p[:whole])
		} else {
			hashOne(&d.s, p[:whole])
		}
		p = p[whole:]
	}
	d.nbuf = copy(d.buf[:], p)
	return n, nil
}

// Sum appends the digest of what was written so far; d is unchanged.
func (d *digest) Sum(in []byte) []byte {
	s := d.s
	// Padding: a one bit, zeros up to 56 bytes mod 64, the length in bits.
	var tail [2 * blockSize]byte
	k := copy(tail[:], d.buf[:d.nbuf])
	tail[k] = 0x80
	end := blockSize
	if k >= blockSize-8 {
		end = 2 * blockSize
	}
	binary.LittleEndian.PutUint64(tail[end-8:], d.total<<3)
	hashOne(&s, tail[:end])
	for _, w := range s {
		in = binary.LittleEndian.AppendUint32(in, w)
	}
	return in
}
