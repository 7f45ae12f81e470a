package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func benchEngine(b *testing.B, n, size int) (*Engine, []Key) { return benchEngineSeg(b, n, size, 0) }

func benchEngineSeg(b *testing.B, n, size, seg int) (*Engine, []Key) {
	e := openT(b, b.TempDir(), Options{ReserveBytes: -1, SegmentSize: seg})
	keys := make([]Key, n)
	data := pattern(1, size)
	for i := range keys {
		keys[i] = tkey(1, uint64(i), 0)
		mustApply(b, e, keys[i], Update{Data: data, ChunkSize: uint32(size)})
	}
	return e, keys
}

func BenchmarkRead1M(b *testing.B) {
	e, keys := benchEngine(b, 64, 1<<20)
	b.SetBytes(1 << 20)
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 1<<20)
		r := rand.New(rand.NewPCG(1, 2))
		for pb.Next() {
			h, err := e.Get(keys[r.IntN(len(keys))])
			if err != nil {
				b.Fatal(err)
			}
			if _, err := h.ReadAt(buf, 0); err != nil {
				b.Fatal(err)
			}
			h.Release()
		}
	})
}

// BenchmarkRead4K reads 4 KiB at random inside 1 MiB chunks on a disk of
// each segment size: the default beside the 64 KiB of a format-1 disk.
func BenchmarkRead4K(b *testing.B) {
	for _, seg := range []int{DefaultSegmentSize, MaxSegmentSize} {
		b.Run(fmt.Sprintf("segment=%dKiB", seg>>10), func(b *testing.B) {
			e, keys := benchEngineSeg(b, 64, 1<<20, seg)
			b.SetBytes(4096)
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 4096)
				r := rand.New(rand.NewPCG(1, 2))
				for pb.Next() {
					h, err := e.Get(keys[r.IntN(len(keys))])
					if err != nil {
						b.Fatal(err)
					}
					if _, err := h.ReadAt(buf, int64(r.IntN(256))*4096); err != nil {
						b.Fatal(err)
					}
					h.Release()
				}
			})
		})
	}
}

func BenchmarkWrite1M(b *testing.B) {
	e := openT(b, b.TempDir(), Options{ReserveBytes: -1})
	data := pattern(1, 1<<20)
	b.SetBytes(1 << 20)
	for i := range b.N {
		mustApply(b, e, tkey(1, uint64(i), 0), Update{Data: data, ChunkSize: 1 << 20})
	}
}
