package engine

// CRC32C of a concatenation from the CRCs of its parts: for content a and b,
// crc(a||b) == crcShift(crc(a), len(b)) ^ crc(b). crcShift is the linear map
// "feed n zero bytes to the register"; the CRC's initial and final inversions
// cancel in the identity. The map for 2^k zero bytes is kept as four byte
// tables (a 32x32 matrix over GF(2), applied a byte of the input at a time);
// any n is the product of the maps of its set bits.

// castagnoliPoly is CRC32C's polynomial, bit-reflected as hash/crc32 uses it.
const castagnoliPoly = 0x82F63B78

// gf2Op is a linear map on 32-bit registers: column i is the image of bit i.
type gf2Op [32]uint32

func (m *gf2Op) apply(x uint32) uint32 {
	var y uint32
	for i := 0; x != 0; i, x = i+1, x>>1 {
		if x&1 != 0 {
			y ^= m[i]
		}
	}
	return y
}

// then returns the map "m, then n".
func (m *gf2Op) then(n *gf2Op) gf2Op {
	var out gf2Op
	for i := range out {
		out[i] = n.apply(m[i])
	}
	return out
}

// byteTables is a gf2Op applied a byte at a time.
type byteTables [4][256]uint32

func (t *byteTables) apply(x uint32) uint32 {
	return t[0][x&0xFF] ^ t[1][x>>8&0xFF] ^ t[2][x>>16&0xFF] ^ t[3][x>>24]
}

// zeroPow[k] feeds 2^k zero bytes; up to the largest chunk.
var zeroPow [27]byteTables

func init() {
	// One zero bit: shift right, fold the polynomial in when bit 0 falls out.
	var op gf2Op
	op[0] = castagnoliPoly
	for i := 1; i < 32; i++ {
		op[i] = 1 << (i - 1)
	}
	for range 3 { // 8 bits: a byte
		op = op.then(&op)
	}
	for k := range zeroPow {
		for b := range 4 {
			for v := range 256 {
				zeroPow[k][b][v] = op.apply(uint32(v) << (8 * b))
			}
		}
		op = op.then(&op)
	}
}

// crcShift is the CRC32C register c after n more zero bytes, without the
// CRC's inversions: see the file comment. 0 <= n < 2^len(zeroPow).
func crcShift(c uint32, n int64) uint32 {
	for k := 0; n != 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			c = zeroPow[k].apply(c)
		}
	}
	return c
}
