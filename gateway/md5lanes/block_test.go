package md5lanes

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
)

// TestBlockLanesMatchesOne: the lane kernel gives each lane the state the
// one-message compression gives it, from distinct states and contents,
// for one block and for many.
func TestBlockLanesMatchesOne(t *testing.T) {
	for _, k := range kernels {
		t.Run(k.name, func(t *testing.T) { testKernel(t, k.run) })
	}
}

func testKernel(t *testing.T, run func(*laneState, *[lanes][]byte, int)) {
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
				k.run(&st, &ptrs, blocks)
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
