package md5lanes

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// blockSize is MD5's block: 16 little-endian 32-bit words.
const blockSize = 64

// initState is MD5's state before the first block (RFC 1321, 3.3).
var initState = [4]uint32{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476}

// sines holds MD5's per-step constants: the integer part of 2^32·|sin(i+1)|.
var sines = func() (k [64]uint32) {
	for i := range k {
		k[i] = uint32(math.Floor(math.Abs(math.Sin(float64(i+1))) * (1 << 32)))
	}
	return k
}()

// rotations holds each step's left rotation: four per round, repeated.
var rotations = [4][4]int{{7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}}

// blockOne runs MD5's compression over the whole blocks of p for one
// message: the path for a lone message's head and tail, and the reference
// the lane kernels are tested against.
func blockOne(s *[4]uint32, p []byte) {
	var m [16]uint32
	for ; len(p) >= blockSize; p = p[blockSize:] {
		for i := range m {
			m[i] = binary.LittleEndian.Uint32(p[4*i:])
		}
		a, b, c, d := s[0], s[1], s[2], s[3]
		for i := range 64 {
			var f uint32
			var g int
			switch i / 16 {
			case 0:
				f, g = d^(b&(c^d)), i
			case 1:
				f, g = c^(d&(b^c)), (5*i+1)%16
			case 2:
				f, g = b^c^d, (3*i+5)%16
			default:
				f, g = c^(b|^d), (7*i)%16
			}
			f += a + sines[i] + m[g]
			a, d, c = d, c, b
			b += bits.RotateLeft32(f, rotations[i/16][i%4])
		}
		s[0] += a
		s[1] += b
		s[2] += c
		s[3] += d
	}
}

// lanes is the number of messages a kernel call advances together.
const lanes = 16

// laneState is the state of 16 messages, word-major: laneState[w][l] is
// word w of lane l's state, as the kernel keeps it in its registers.
type laneState [4][lanes]uint32

// blockLanesGeneric is the kernel without SIMD: each busy lane in turn.
func blockLanesGeneric(st *laneState, ptrs *[lanes][]byte, blocks int, busy uint16) {
	for l := range lanes {
		if busy&(1<<l) == 0 {
			continue
		}
		s := [4]uint32{st[0][l], st[1][l], st[2][l], st[3][l]}
		blockOne(&s, ptrs[l][:blocks*blockSize])
		st[0][l], st[1][l], st[2][l], st[3][l] = s[0], s[1], s[2], s[3]
	}
}

// kernel is one implementation of the lane step: every lane whose bit is
// set in busy advanced by blocks blocks, each ptrs[l] holding at least
// blocks*blockSize bytes. The kernel advances lanes in groups of width
// (its vector's lanes), and skips a group with no busy lane; the other
// lanes of a group it runs advance too, over whatever ptrs holds for them
// (their state is nobody's).
type kernel struct {
	name  string
	width int
	run   func(st *laneState, ptrs *[lanes][]byte, blocks int, busy uint16)
}

// fastest is the fastest kernel this machine runs.
var fastest = kernels[0]
