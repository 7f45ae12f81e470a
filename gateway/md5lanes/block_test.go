package md5lanes

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
)

// TestBlockLanesMatchesOne: the lane kernel gives each busy lane the state
// the one-message compression gives it, from distinct states and
// contents, for one block and for many, whichever lanes are busy.
func TestBlockLanesMatchesOne(t *testing.T) {
	for _, k := range kernels {
		for _, busy := range busyMasks {
			t.Run(fmt.Sprintf("%s/busy=%04x", k.name, busy), func(t *testing.T) {
				testAdvance(t, busy, func(st *laneState, ptrs *[lanes][]byte, blocks int) { k.run(st, ptrs, blocks, busy) })
			})
		}
	}
}

// TestAdvanceMatchesOne: the server's step (kernel groups, lone lanes
// hashed alone) advances each busy lane as the reference does.
func TestAdvanceMatchesOne(t *testing.T) {
	var srv Server
	for _, busy := range busyMasks {
		t.Run(fmt.Sprintf("busy=%04x", busy), func(t *testing.T) {
			testAdvance(t, busy, func(st *laneState, ptrs *[lanes][]byte, blocks int) { srv.advance(st, ptrs, blocks, busy) })
		})
	}
}

// busyMasks: every lane, none, one half or the other, a lone lane at
// either end, one lane in each group of four, and a scatter.
var busyMasks = []uint16{0xffff, 0, 0x00ff, 0xff00, 0x0001, 0x8000, 0x0101, 0x8421, 0x5a3c}

func testAdvance(t *testing.T, busy uint16, run func(*laneState, *[lanes][]byte, int)) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, blocks := range []int{0, 1, 2, 7, 64, 300} {
		var st laneState
		var want [lanes][4]uint32
		var ptrs [lanes][]byte
		for l := range lanes {
			for w := range 4 {
				st[w][l] = r.Uint32()
				want[l][w] = st[w][l]
			}
			ptrs[l] = make([]byte, blocks*blockSize)
			for i := range ptrs[l] {
				ptrs[l][i] = byte(r.Uint32())
			}
			blockOne(&want[l], ptrs[l])
		}
		run(&st, &ptrs, blocks)
		for l := range lanes {
			if busy&(1<<l) == 0 {
				continue // an idle lane's state is nobody's
			}
			got := [4]uint32{st[0][l], st[1][l], st[2][l], st[3][l]}
			if got != want[l] {
				t.Errorf("%d blocks, lane %d: state %08x, want %08x", blocks, l, got, want[l])
			}
		}
	}
}

// BenchmarkKernels: every lane busy, MB/s over all lanes.
func BenchmarkKernels(b *testing.B) {
	const blocks = 256
	var ptrs [lanes][]byte
	for l := range ptrs {
		ptrs[l] = make([]byte, blocks*blockSize)
	}
	for _, k := range kernels {
		b.Run(k.name, func(b *testing.B) {
			var st laneState
			b.SetBytes(lanes * blocks * blockSize)
			for range b.N {
				k.run(&st, &ptrs, blocks, 0xffff)
			}
		})
	}
}

// TestHashOneMatchesBlockOne: this machine's one-message compression
// gives the reference's state.
func TestHashOneMatchesBlockOne(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, blocks := range []int{0, 1, 3, 100} {
		p := make([]byte, blocks*blockSize+r.IntN(blockSize))
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		s := [4]uint32{r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}
		want := s
		blockOne(&want, p)
		hashOne(&s, p)
		if s != want {
			t.Errorf("%d bytes: state %08x, want %08x", len(p), s, want)
		}
	}
}

func BenchmarkHashOne(b *testing.B) {
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	s := initState
	for range b.N {
		hashOne(&s, buf)
	}
}

func BenchmarkBlockOne(b *testing.B) {
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	s := initState
	for range b.N {
		blockOne(&s, buf)
	}
}

// TestGeneratedKernelsUpToDate: lanes_amd64.s is what gen_lanes.go writes.
func TestGeneratedKernelsUpToDate(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to run the generator")
	}
	out, err := exec.Command(goTool, "run", "gen_lanes.go").Output()
	if err != nil {
		t.Fatalf("go run gen_lanes.go: %v", err)
	}
	have, err := os.ReadFile("lanes_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, have) {
		t.Fatal("lanes_amd64.s differs from what gen_lanes.go writes: run go generate ./gateway/md5lanes")
	}
}

// TestStdBlocksMatchesBlockOne: crypto/md5 takes our state and gives it
// back advanced as the reference advances it. A false here means its
// saved-state form changed and long runs lost their faster path.
func TestStdBlocksMatchesBlockOne(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, blocks := range []int{1, stdMinBlocks, 1000} {
		p := make([]byte, blocks*blockSize)
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		s := [4]uint32{r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}
		want := s
		blockOne(&want, p)
		if !stdBlocks(&s, p) {
			t.Fatalf("%d blocks: crypto/md5 refused the state handed to it", blocks)
		}
		if s != want {
			t.Errorf("%d blocks: state %08x, want %08x", blocks, s, want)
		}
	}
}
