//go:build amd64 && !purego

package md5lanes

import (
	"runtime"

	"golang.org/x/sys/cpu"
)

//go:generate sh -c "go run gen_lanes.go > lanes_amd64.s"

// block16 and block8 advance 16 (8) messages by blocks blocks each,
// ptrs[l] pointing at lane l's next block (lanes_amd64.s).
//
//go:noescape
func block16(state *laneState, ptrs *[16]*byte, blocks int)

//go:noescape
func block8(state *[4][8]uint32, ptrs *[8]*byte, blocks int)

// kernels are the lane kernels this machine can run, fastest first.
var kernels = func() []kernel {
	var ks []kernel
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX2 {
		ks = append(ks, kernel{"avx512", 16, blockLanes16})
	}
	if cpu.X86.HasAVX2 {
		ks = append(ks, kernel{"avx2", 8, blockLanes8})
	}
	return append(ks, kernel{"generic", 1, blockLanesGeneric})
}()

// pointers returns each lane's first byte; each holds at least blocks
// blocks.
func pointers(ptrs *[lanes][]byte, blocks int) (p [lanes]*byte) {
	for l := range lanes {
		p[l] = &ptrs[l][:blocks*blockSize][0]
	}
	return p
}

func blockLanes16(st *laneState, ptrs *[lanes][]byte, blocks int, busy uint16) {
	if blocks == 0 || busy == 0 {
		return
	}
	p := pointers(ptrs, blocks)
	block16(st, &p, blocks)
	runtime.KeepAlive(ptrs)
}

// blockLanes8 runs the 16 lanes as two halves of 8, each only when one of
// its lanes is busy: with 8 uploads or fewer, the upper half would hash
// only zeros, and did, half the kernel's time.
func blockLanes8(st *laneState, ptrs *[lanes][]byte, blocks int, busy uint16) {
	if blocks == 0 {
		return
	}
	p := pointers(ptrs, blocks)
	for half := range 2 {
		if busy>>(half*8)&0xff == 0 {
			continue
		}
		var s [4][8]uint32
		for w := range 4 {
			copy(s[w][:], st[w][half*8:])
		}
		block8(&s, (*[8]*byte)(p[half*8:]), blocks)
		for w := range 4 {
			copy(st[w][half*8:], s[w][:])
		}
	}
	runtime.KeepAlive(ptrs)
}

//go:noescape
func blockScalar(state *[4]uint32, p *byte, blocks int)

// kernelOne advances one message's state by the whole blocks of p in
// general registers.
func kernelOne(s *[4]uint32, p []byte) {
	if n := len(p) / blockSize; n > 0 {
		blockScalar(s, &p[0], n)
	}
}
