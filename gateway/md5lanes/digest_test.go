package md5lanes

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime/trace"
	"sync"
	"testing"
)

// TestSumsAreMD5: messages of every length around the block and lane
// thresholds, written in pieces of many sizes, from many goroutines at
// once, have crypto/md5's sums; Sum leaves the digest as it was, and Reset
// starts over.
func TestSumsAreMD5(t *testing.T) {
	var srv Server
	r := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	lengths := []int{0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, minLaneWrite - 1, minLaneWrite, minLaneWrite + 1,
		maxRound*blockSize + 3, 1 << 20, 3 << 20}
	const writers = 24
	var wg sync.WaitGroup
	errs := make(chan error, writers*len(lengths))
	for gi := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(gi), 5))
			h := srv.New()
			for _, n := range lengths {
				h.Reset()
				msg := data[r.IntN(len(data)-n+1):][:n]
				for rest := msg; len(rest) > 0; {
					k := min(len(rest), 1+r.IntN(3*minLaneWrite))
					if r.IntN(4) == 0 {
						k = min(len(rest), 1+r.IntN(70))
					}
					h.Write(rest[:k])
					rest = rest[k:]
					if r.IntN(8) == 0 {
						h.Sum(nil)
					}
				}
				want := md5.Sum(msg)
				if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
					errs <- fmt.Errorf("goroutine %d, %d bytes: %x, want %x", gi, n, got, want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestLanesUnderExecutionTrace: hashing in the lanes while the execution
// tracer walks stacks by frame pointer does not crash the process (a kernel
// that clobbers BP does).
func TestLanesUnderExecutionTrace(t *testing.T) {
	if err := trace.Start(io.Discard); err != nil {
		t.Skipf("an execution trace is already running: %v", err)
	}
	defer trace.Stop()
	var srv Server
	data := bytes.Repeat([]byte("flyfs md5 lanes "), 1<<16)
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			for range 20 {
				h := srv.New()
				h.Write(data)
				want := md5.Sum(data)
				if !bytes.Equal(h.Sum(nil), want[:]) {
					t.Error("wrong sum under the tracer")
					return
				}
			}
		})
	}
	wg.Wait()
}

func benchmarkStreams(b *testing.B, streams int, newHash func() interface{ Write([]byte) (int, error) }) {
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)) * int64(streams))
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() {
			h := newHash()
			for range b.N {
				h.Write(buf)
			}
		})
	}
	wg.Wait()
}

// BenchmarkMD5: streams hashing 1 MiB writes at once, through the lanes
// and through crypto/md5 (the baseline), MB/s summed over the streams.
func BenchmarkMD5(b *testing.B) {
	var srv Server
	for _, streams := range []int{1, 2, 8, 16} {
		b.Run(fmt.Sprintf("lanes/streams=%d", streams), func(b *testing.B) {
			benchmarkStreams(b, streams, func() interface{ Write([]byte) (int, error) } { return srv.New() })
		})
		b.Run(fmt.Sprintf("crypto-md5/streams=%d", streams), func(b *testing.B) {
			benchmarkStreams(b, streams, func() interface{ Write([]byte) (int, error) } { return md5.New() })
		})
	}
}
