package layout

import (
	"errors"
	"math"
	"testing"
)

// checkSplit verifies every invariant Split documents for [off, off+n).
func checkSplit(t testing.TB, l Layout, off, n uint64, ps []Piece) {
	t.Helper()
	if n == 0 {
		if len(ps) != 0 {
			t.Fatalf("zero length gave %v", ps)
		}
		return
	}
	cs := uint64(l.ChunkSize)
	if want := (off+n-1)/cs - off/cs + 1; uint64(len(ps)) != want {
		t.Fatalf("split(%d, %d) gave %d pieces, want %d", off, n, len(ps), want)
	}
	var buf uint64
	for i, p := range ps {
		if p.Length == 0 {
			t.Fatalf("piece %d empty: %+v", i, p)
		}
		if p.OffsetInBuffer != buf {
			t.Fatalf("piece %d at buffer %d, want %d (gap or overlap)", i, p.OffsetInBuffer, buf)
		}
		if uint64(p.OffsetInChunk)+uint64(p.Length) > cs {
			t.Fatalf("piece %d crosses its chunk: %+v", i, p)
		}
		// The piece is exactly the file bytes at off+buf.
		if fo := off + buf; p.ChunkIndex != fo/cs || uint64(p.OffsetInChunk) != fo%cs {
			t.Fatalf("piece %d %+v does not start at file offset %d", i, p, fo)
		}
		if i > 0 && p.OffsetInChunk != 0 {
			t.Fatalf("piece %d starts inside its chunk: %+v", i, p)
		}
		if i < len(ps)-1 && uint64(p.OffsetInChunk)+uint64(p.Length) != cs {
			t.Fatalf("piece %d ends inside its chunk: %+v", i, p)
		}
		buf += uint64(p.Length)
	}
	if buf != n {
		t.Fatalf("pieces cover %d bytes, want %d", buf, n)
	}
}

func TestSplitEdgeCases(t *testing.T) {
	const cs = 1 << 16
	l := Layout{TableID: 1, TableVersion: 1, ChunkSize: cs, Stripe: 1, Algo: DefaultAlgo}
	for _, c := range []struct {
		name   string
		off, n uint64
		want   []Piece // nil: check invariants only
	}{
		{"zero length", 12345, 0, []Piece{}},
		{"one byte", 7, 1, []Piece{{0, 7, 1, 0}}},
		{"exactly one chunk", cs, cs, []Piece{{1, 0, cs, 0}}},
		{"inside one chunk", 10, 100, []Piece{{0, 10, 100, 0}}},
		{"to the chunk end", 10, cs - 10, []Piece{{0, 10, cs - 10, 0}}},
		{"one past the chunk end", 10, cs - 9, []Piece{{0, 10, cs - 10, 0}, {1, 0, 1, cs - 10}}},
		{"unaligned both ends", cs - 3, 2*cs + 5, []Piece{{0, cs - 3, 3, 0}, {1, 0, cs, 3}, {2, 0, cs, cs + 3}, {3, 0, 2, 2*cs + 3}}},
		{"aligned several chunks", 2 * cs, 3 * cs, []Piece{{2, 0, cs, 0}, {3, 0, cs, cs}, {4, 0, cs, 2 * cs}}},
		{"beyond 4 GiB", 5<<30 + 100, cs, []Piece{{5 << 14, 100, cs - 100, 0}, {5<<14 + 1, 0, 100, cs - 100}}},
		{"last byte of the address space", math.MaxUint64, 0, []Piece{}},
		{"end = 2^64-1", math.MaxUint64 - 10, 10, []Piece{{math.MaxUint64 / cs, cs - 11, 10, 0}}},
		{"spans 4 GiB boundary", 1<<32 - 5, 10, []Piece{{1<<16 - 1, cs - 5, 5, 0}, {1 << 16, 0, 5, 5}}},
	} {
		ps, err := l.Split(c.off, c.n)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		checkSplit(t, l, c.off, c.n, ps)
		if len(ps) != len(c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, ps, c.want)
			continue
		}
		for i := range ps {
			if ps[i] != c.want[i] {
				t.Errorf("%s: piece %d = %+v, want %+v", c.name, i, ps[i], c.want[i])
			}
		}
	}
}

func TestSplitRejects(t *testing.T) {
	l := Layout{TableID: 1, TableVersion: 1, ChunkSize: MinChunkSize, Stripe: 1, Algo: DefaultAlgo}
	// The end offset+length must be representable (it becomes a file length),
	// so the byte at 2^64-1 is out of reach.
	if _, err := l.Split(math.MaxUint64-9, 10); !errors.Is(err, ErrLayout) {
		t.Errorf("range ending at 2^64: %v", err)
	}
	if _, err := l.Split(math.MaxUint64, 2); !errors.Is(err, ErrLayout) {
		t.Errorf("overflowing range: %v", err)
	}
	if _, err := l.Split(1, math.MaxUint64); !errors.Is(err, ErrLayout) {
		t.Errorf("overflowing length: %v", err)
	}
	if _, err := l.Split(0, MaxPieces*MinChunkSize+1); !errors.Is(err, ErrLayout) {
		t.Errorf("too many pieces: %v", err)
	}
	ps, err := l.Split(0, MaxPieces*MinChunkSize)
	if err != nil || len(ps) != MaxPieces {
		t.Errorf("exactly MaxPieces: %d pieces, %v", len(ps), err)
	}
}

func TestSplitMatchesChunkMath(t *testing.T) {
	// Every byte of a split range, looked up through its piece, agrees with
	// ChunkIndex/ChunkOffset/ChunkID of its file offset.
	l := Layout{TableID: 1, TableVersion: 1, ChunkSize: MinChunkSize, Stripe: 1, Algo: DefaultAlgo}
	off, n := uint64(3*MinChunkSize-17), uint64(2*MinChunkSize+40)
	ps, err := l.Split(off, n)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		for _, b := range []uint64{0, uint64(p.Length) - 1} {
			fo := off + p.OffsetInBuffer + b
			if l.ChunkIndex(fo) != p.ChunkIndex || l.ChunkOffset(fo) != p.OffsetInChunk+uint32(b) ||
				l.ChunkID(9, fo) != MakeChunkID(9, p.ChunkIndex) {
				t.Fatalf("byte %d of piece %+v disagrees with the chunk math", b, p)
			}
		}
	}
}
