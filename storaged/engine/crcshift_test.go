package engine

import (
	"math/rand/v2"
	"testing"
)

func TestCRCShiftCombines(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 8, 100, 4096, 4097, 65535, 65536, 1 << 20} {
		a, b := make([]byte, r.IntN(5000)), make([]byte, n)
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		whole := crc(append(append([]byte{}, a...), b...))
		if got := crcShift(crc(a), int64(n)) ^ crc(b); got != whole {
			t.Fatalf("len(a)=%d len(b)=%d: combined %08x, crc of the whole %08x", len(a), n, got, whole)
		}
	}
}

// The chunk checksum is the same for the same content whatever the segment
// size it was computed from: replicas on disks of different segment sizes
// agree.
func TestChunkChecksumIndependentOfSegment(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 4095, 4096, 4097, 65536, 65537, 200_000, 1 << 20} {
		content := make([]byte, n)
		for i := range content {
			content[i] = byte(r.Uint32())
		}
		want := ContentChecksum(content)
		for seg := int64(MinSegmentSize); seg <= MaxSegmentSize; seg *= 2 {
			crcs := make([]uint32, segCount(uint32(n), seg))
			for i := range crcs {
				lo := int64(i) * seg
				crcs[i] = crc(content[lo:min(lo+seg, int64(n))])
			}
			if got := chunkChecksum(uint32(n), crcs, seg); got != want {
				t.Errorf("%d bytes in %d-byte segments: checksum %08x, want %08x", n, seg, got, want)
			}
		}
	}
}
