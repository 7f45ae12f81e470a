package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/flyfs/flyfs/core/layout"
)

func TestClassFor(t *testing.T) {
	for _, tc := range []struct {
		n    uint32
		want uint8
	}{
		{0, noClass}, {1, 0}, {64 << 10, 0}, {64<<10 + 1, 1}, {128 << 10, 1},
		{1 << 20, 4}, {1<<20 + 1, 5}, {4 << 20, 6}, {MaxChunkSize, 10},
	} {
		if got := classFor(tc.n); got != tc.want {
			t.Errorf("classFor(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestRoundTripSizes(t *testing.T) {
	e := openT(t, t.TempDir(), testOptions())
	for i, size := range []int{0, 1, 4096, 64<<10 - 1, 64 << 10, 64<<10 + 1, 1 << 20, 4 << 20, MaxChunkSize} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			k := tkey(1, 7, uint64(i))
			data := pattern(uint64(size), size)
			cs := uint32(max(size, 1))
			m := mustApply(t, e, k, Update{Data: data, Replace: true, ChunkSize: cs, ChainVer: 3, UpdateVer: 5, CommitVer: 4})
			want := Meta{ChainVer: 3, CommitVer: 4, UpdateVer: 5, Len: uint32(size), ChunkSize: cs, Checksum: ContentChecksum(data)}
			if m != want {
				t.Fatalf("Apply meta = %+v, want %+v", m, want)
			}
			got, gm := readChunk(t, e, k)
			if gm != want || !bytes.Equal(got, data) {
				t.Fatalf("read back: meta %+v, %d bytes equal=%v", gm, len(got), bytes.Equal(got, data))
			}
			v := e.current(k)
			if size == 0 {
				if v.blk != nil {
					t.Fatalf("empty chunk has block %v", v.blk.loc)
				}
				return
			}
			if v.blk.loc.class != classFor(uint32(size)) {
				t.Fatalf("class %d, want %d", v.blk.loc.class, classFor(uint32(size)))
			}
			// Unaligned reads spanning segment boundaries and the end.
			h, _ := e.Get(k)
			defer h.Release()
			r := rand.New(rand.NewPCG(1, uint64(size)))
			for range 50 {
				off := r.IntN(size)
				n := r.IntN(200<<10) + 1
				p := make([]byte, n)
				got, err := h.ReadAt(p, int64(off))
				wantN := min(n, size-off)
				if got != wantN || !bytes.Equal(p[:got], data[off:off+wantN]) {
					t.Fatalf("ReadAt(%d, %d) = %d, %v", off, n, got, err)
				}
				if (wantN < n) != errors.Is(err, io.EOF) || (err != nil && !errors.Is(err, io.EOF)) {
					t.Fatalf("ReadAt(%d, %d) err = %v", off, n, err)
				}
			}
		})
	}
}

func TestReadPastEnd(t *testing.T) {
	e := openT(t, t.TempDir(), testOptions())
	k := tkey(1, 1, 0)
	mustApply(t, e, k, Update{Data: []byte("hello"), ChunkSize: 1 << 20})
	h, err := e.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	p := make([]byte, 10)
	if n, err := h.ReadAt(p, 3); n != 2 || err != io.EOF || string(p[:2]) != "lo" {
		t.Fatalf("short read = %d %v %q", n, err, p[:n])
	}
	if n, err := h.ReadAt(p, 5); n != 0 || err != io.EOF {
		t.Fatalf("read at end = %d %v", n, err)
	}
	if n, err := h.ReadAt(p, 100); n != 0 || err != io.EOF {
		t.Fatalf("read past end = %d %v", n, err)
	}
}

// Each step applies one update to a chunk and states what must happen to
// its block: stay in place, or move (copy-on-write) into a given class.
func TestUpdateSequences(t *testing.T) {
	const cs = 4 << 20
	type step struct {
		name  string
		u     Update
		moved bool  // block must change
		class uint8 // expected class afterwards (if content non-empty)
	}
	w := func(off, n int, seed uint64) Update {
		return Update{Offset: uint32(off), Data: pattern(seed, n), ChunkSize: cs}
	}
	trunc := func(n int) Update { return Update{Truncate: true, Length: uint32(n), ChunkSize: cs} }
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"append in place", []step{
			{"create 100K", w(0, 100<<10, 1), true, 1},
			{"append 20K", w(100<<10, 20<<10, 2), false, 1},
			{"append unaligned", w(120<<10, 333, 3), false, 1},
			{"append with hole", w(125<<10, 1000, 4), false, 1},
			{"append grows class", w(126<<10, 10<<10, 5), true, 2},
		}},
		{"overwrite middle is COW", []step{
			{"create 1M", w(0, 1<<20, 1), true, 4},
			{"overwrite 4K in the middle", w(300<<10+17, 4096, 2), true, 4},
			{"overwrite across segments", w(64<<10-10, 128<<10, 3), true, 4},
			{"overwrite tail past end", w(1<<20-100, 200, 4), true, 5},
		}},
		{"growth through classes", []step{
			{"64K", w(0, 64<<10, 1), true, 0},
			{"+1", w(64<<10, 1, 2), true, 1},
			{"to 256K", w(64<<10+1, 192<<10-1, 3), true, 2},
			{"to 4M", w(256<<10, 4<<20-256<<10, 4), true, 6},
		}},
		{"truncate", []step{
			{"create 200K", w(0, 200<<10, 1), true, 2},
			{"cut in class", trunc(150 << 10), false, 2},
			{"append after cut goes COW", w(150<<10, 10, 2), true, 2},
			{"extend with zeros in place", trunc(250 << 10), false, 2},
			{"cut to smaller class", trunc(100 << 10), true, 1},
			{"cut at segment boundary", trunc(64 << 10), true, 0},
			{"extend to bigger class", trunc(1 << 20), true, 4},
			{"same length", trunc(1 << 20), false, 4},
			{"cut to zero", trunc(0), true, 0},
			{"extend from zero", trunc(10), true, 0},
		}},
		{"replace", []step{
			{"create", w(0, 300<<10, 1), true, 3},
			{"replace smaller", Update{Replace: true, Data: pattern(9, 5000), ChunkSize: cs}, true, 0},
			{"replace same size", Update{Replace: true, Data: pattern(10, 5000), ChunkSize: cs}, true, 0},
			{"replace empty", Update{Replace: true, ChunkSize: cs}, true, 0},
			{"empty write keeps content", Update{Offset: 0, ChunkSize: cs}, false, 0},
		}},
		{"write at offset into new chunk", []step{
			{"create with hole", w(200<<10, 10, 1), true, 2},
			{"fill hole", w(0, 100, 2), true, 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openT(t, t.TempDir(), testOptions())
			k := tkey(1, 1, 0)
			var m model
			var prev *block
			for i, st := range tc.steps {
				st.u.UpdateVer, st.u.CommitVer, st.u.ChainVer = uint32(i+1), uint32(i+1), 1
				mustApply(t, e, k, st.u)
				m.apply(st.u)
				if why := m.check(e, k); why != "" {
					t.Fatalf("step %q: %s", st.name, why)
				}
				v := e.current(k)
				if v.blk == nil {
					if m.meta.Len != 0 {
						t.Fatalf("step %q: no block for %d bytes", st.name, m.meta.Len)
					}
					prev = nil
					continue
				}
				if moved := v.blk != prev; moved != st.moved {
					t.Fatalf("step %q: moved=%v, want %v", st.name, moved, st.moved)
				}
				if v.blk.loc.class != st.class {
					t.Fatalf("step %q: class %d, want %d", st.name, v.blk.loc.class, st.class)
				}
				prev = v.blk
			}
		})
	}
}

func TestCommitOnlyVersions(t *testing.T) {
	e := openT(t, t.TempDir(), testOptions())
	k := tkey(2, 5, 1)
	data := pattern(1, 70<<10)
	m0 := mustApply(t, e, k, Update{Data: data, ChunkSize: 1 << 20, ChainVer: 1, UpdateVer: 2, CommitVer: 1})
	loc := e.current(k).blk.loc
	m1, err := e.Commit(k, 2, 7, false)
	if err != nil {
		t.Fatal(err)
	}
	want := m0
	want.CommitVer, want.ChainVer = 2, 7
	if m1 != want {
		t.Fatalf("Commit meta %+v, want %+v", m1, want)
	}
	got, gm := readChunk(t, e, k)
	if gm != want || !bytes.Equal(got, data) || e.current(k).blk.loc != loc {
		t.Fatalf("commit changed content or block")
	}
	if _, err := e.Commit(k, 3, 7, false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("commit beyond update version: %v", err)
	}
	if _, err := e.Commit(tkey(2, 5, 2), 1, 1, false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("commit of missing chunk: %v", err)
	}
}

func TestRemoveFreesBlock(t *testing.T) {
	e := openT(t, t.TempDir(), testOptions())
	a := tkey(1, 1, 0)
	mustApply(t, e, a, Update{Data: pattern(1, 100<<10), ChunkSize: 1 << 20})
	loc := e.current(a).blk.loc
	used := e.Stats().Classes[1].UsedBlocks
	if err := e.Remove(a); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(a); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Remove: %v", err)
	}
	if got := e.Stats().Classes[1].UsedBlocks; got != used-1 {
		t.Fatalf("used blocks %d after remove, want %d", got, used-1)
	}
	n := reusedBeforeGrowth(t, e, 1, loc, func(i int) Key {
		k := tkey(1, 2, uint64(i))
		mustApply(t, e, k, Update{Data: pattern(2, 90<<10), ChunkSize: 1 << 20})
		return k
	})
	if err := e.Remove(tkey(9, 9, 9)); err != nil {
		t.Fatalf("Remove of missing chunk: %v", err)
	}
	if s := e.Stats(); s.Chunks != int64(n) || s.UsedBytes != int64(n)*90<<10 {
		t.Fatalf("stats %+v, want %d chunks of 90 KiB", s, n)
	}
}

func TestHandleKeepsOldVersion(t *testing.T) {
	e := openT(t, t.TempDir(), testOptions())
	k := tkey(1, 1, 0)
	old := pattern(1, 200<<10)
	mustApply(t, e, k, Update{Data: old, ChunkSize: 1 << 20, UpdateVer: 1, CommitVer: 1})
	h, err := e.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	oldLoc := h.v.blk.loc
	mustApply(t, e, k, Update{Offset: 1000, Data: pattern(2, 5000), ChunkSize: 1 << 20, UpdateVer: 2, CommitVer: 2})
	if err := e.Remove(k); err != nil {
		t.Fatal(err)
	}
	// The old block is pinned: new chunks of its class must not get it.
	for i := range 20 {
		mustApply(t, e, tkey(1, 3, uint64(i)), Update{Data: pattern(uint64(i), 150<<10), ChunkSize: 1 << 20})
		if e.current(tkey(1, 3, uint64(i))).blk.loc == oldLoc {
			t.Fatalf("pinned block %v reused", oldLoc)
		}
	}
	got, err := readHandle(h)
	if err != nil || !bytes.Equal(got, old) || h.Meta().UpdateVer != 1 {
		t.Fatalf("handle content changed: %v", err)
	}
	usedBefore := e.Stats().Classes[2].UsedBlocks
	h.Release()
	h.Release() // harmless
	if got := e.Stats().Classes[2].UsedBlocks; got != usedBefore-1 {
		t.Fatalf("used blocks %d after release, want %d", got, usedBefore-1)
	}
	if _, err := h.ReadAt(make([]byte, 1), 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("read after release: %v", err)
	}
	reusedBeforeGrowth(t, e, 2, oldLoc, func(i int) Key {
		k := tkey(1, 4, uint64(i))
		mustApply(t, e, k, Update{Data: pattern(3, 150<<10), ChunkSize: 1 << 20})
		return k
	})
}

// reusedBeforeGrowth writes new chunks of class c with write(0), write(1)...
// until every block the class has is in use, and fails unless one of them
// got the freed block and the class did not grow first. It returns how
// many it wrote.
func reusedBeforeGrowth(t *testing.T, e *Engine, c int, freed blockLoc, write func(i int) Key) int {
	t.Helper()
	blocks := e.Stats().Classes[c].Blocks
	reused := false
	n := 0
	for e.Stats().Classes[c].UsedBlocks < blocks {
		k := write(n)
		n++
		if got := e.Stats().Classes[c].Blocks; got != blocks {
			t.Fatalf("class %d grew to %d blocks with a block free (%v)", c, got, freed)
		}
		if e.current(k).blk.loc.place() == freed.place() {
			reused = true
		}
	}
	if !reused {
		t.Fatalf("freed block %v not reused before the class's last free block", freed)
	}
	return n
}

func TestList(t *testing.T) {
	e := openT(t, t.TempDir(), testOptions())
	var want []layout.ChunkID
	for _, chain := range []uint32{1, 2, ^uint32(0)} {
		for ino := uint64(1); ino <= 3; ino++ {
			for idx := uint64(0); idx < 4; idx++ {
				k := tkey(chain, ino, idx)
				mustApply(t, e, k, Update{Data: []byte{byte(idx)}, ChunkSize: 1 << 20, UpdateVer: uint32(idx)})
				if chain == 2 {
					want = append(want, k.Chunk)
				}
			}
		}
	}
	ids := func(es []Entry) []layout.ChunkID {
		var out []layout.ChunkID
		for _, e := range es {
			out = append(out, e.Chunk)
		}
		return out
	}
	rev := func(s []layout.ChunkID) []layout.ChunkID {
		out := append([]layout.ChunkID(nil), s...)
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		chain      uint32
		begin, end layout.ChunkID
		limit      int
		reverse    bool
		want       []layout.ChunkID
		more       bool
	}{
		{"all", 2, layout.ChunkID{}, layout.ChunkID{}, 0, false, want, false},
		{"all reverse", 2, layout.ChunkID{}, layout.ChunkID{}, 0, true, rev(want), false},
		{"limit", 2, layout.ChunkID{}, layout.ChunkID{}, 5, false, want[:5], true},
		{"limit exact", 2, layout.ChunkID{}, layout.ChunkID{}, 12, false, want, false},
		{"reverse limit", 2, layout.ChunkID{}, layout.ChunkID{}, 3, true, rev(want)[:3], true},
		{"one inode", 2, layout.MakeChunkID(2, 0), layout.MakeChunkID(3, 0), 0, false, want[4:8], false},
		{"last chunk of inode", 2, layout.MakeChunkID(2, 0), layout.MakeChunkID(3, 0), 1, true, want[7:8], true},
		{"half-open", 2, layout.MakeChunkID(1, 2), layout.MakeChunkID(2, 1), 0, false, want[2:5], false},
		{"empty range", 2, layout.MakeChunkID(3, 0), layout.MakeChunkID(2, 0), 0, false, nil, false},
		{"max chain", ^uint32(0), layout.MakeChunkID(3, 3), layout.ChunkID{}, 0, false, []layout.ChunkID{layout.MakeChunkID(3, 3)}, false},
		{"missing chain", 7, layout.ChunkID{}, layout.ChunkID{}, 0, false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es, more, err := e.List(tc.chain, tc.begin, tc.end, tc.limit, tc.reverse)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(es); fmt.Sprint(got) != fmt.Sprint(tc.want) || more != tc.more {
				t.Fatalf("got %v more=%v, want %v more=%v", got, more, tc.want, tc.more)
			}
			for _, en := range es {
				if en.Meta.Len != 1 || en.Meta.UpdateVer != uint32(en.Chunk.Index()) {
					t.Fatalf("entry %v meta %+v", en.Chunk, en.Meta)
				}
			}
		})
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	models := map[Key]*model{}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		k := tkey(uint32(r.IntN(3)), uint64(r.IntN(5)), uint64(r.IntN(6)))
		m := models[k]
		if m == nil {
			m = &model{}
			models[k] = m
		}
		u := randomUpdate(r, m, 512<<10, uint32(i+1))
		switch {
		case u == nil:
			if err := e.Remove(k); err != nil {
				t.Fatal(err)
			}
			m.remove()
		default:
			mustApply(t, e, k, *u)
			m.apply(*u)
		}
		if i%97 == 0 { // reopen now and then
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if e, err = Open(dir, testOptions()); err != nil {
				t.Fatal(err)
			}
		}
	}
	statsBefore := e.Stats()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openT(t, dir, testOptions())
	for k, m := range models {
		if why := m.check(e, k); why != "" {
			t.Fatalf("%v after reopen: %s", k, why)
		}
	}
	st := e.Stats()
	if st.Chunks != statsBefore.Chunks || st.UsedBytes != statsBefore.UsedBytes {
		t.Fatalf("stats after reopen %+v, before %+v", st, statsBefore)
	}
	for c := range st.Classes {
		// Before: blocks pinned by nothing, so used == referenced.
		if st.Classes[c].UsedBlocks != statsBefore.Classes[c].UsedBlocks {
			t.Fatalf("class %d used blocks %d, before %d", c, st.Classes[c].UsedBlocks, statsBefore.Classes[c].UsedBlocks)
		}
	}
	rep, err := e.Verify(t.Context())
	if err != nil || !rep.OK() {
		t.Fatalf("Verify: %v %+v", err, rep)
	}
}

// randomUpdate picks an update for a chunk in state m; nil means remove.
func randomUpdate(r *rand.Rand, m *model, cs int, ver uint32) *Update {
	n := len(m.data)
	u := &Update{ChunkSize: uint32(cs), ChainVer: 1, UpdateVer: ver, CommitVer: ver}
	if r.IntN(4) == 0 {
		u.CommitVer = ver - 1
	}
	size := func() int {
		if r.IntN(3) == 0 {
			return r.IntN(200) + 1
		}
		return r.IntN(cs/3) + 1
	}
	switch op := r.IntN(20); {
	case op < 5: // append
		l := min(size(), cs-n)
		u.Offset, u.Data = uint32(n), pattern(r.Uint64(), l)
	case op < 9 && n > 0: // overwrite inside
		off := r.IntN(n)
		u.Offset, u.Data = uint32(off), pattern(r.Uint64(), min(size(), cs-off))
	case op < 12: // write anywhere (holes)
		off := r.IntN(cs)
		u.Offset, u.Data = uint32(off), pattern(r.Uint64(), min(size(), cs-off))
	case op < 15:
		u.Replace, u.Data = true, pattern(r.Uint64(), r.IntN(cs+1))
	case op < 19:
		u.Truncate, u.Length = true, uint32(r.IntN(cs+1))
	default:
		return nil
	}
	return u
}

func TestBadInputs(t *testing.T) {
	e := openT(t, t.TempDir(), testOptions())
	k := tkey(1, 1, 0)
	mustApply(t, e, k, Update{Data: pattern(1, 10), ChunkSize: 1 << 20})
	for _, tc := range []struct {
		name string
		u    Update
		want error
	}{
		{"zero chunk size", Update{Data: []byte{1}}, ErrInvalid},
		{"chunk size too large", Update{Data: []byte{1}, ChunkSize: MaxChunkSize + 1}, ErrInvalid},
		{"commit > update", Update{Data: []byte{1}, ChunkSize: 1 << 20, CommitVer: 2, UpdateVer: 1}, ErrInvalid},
		{"replace+truncate", Update{Replace: true, Truncate: true, ChunkSize: 1 << 20}, ErrInvalid},
		{"replace at offset", Update{Replace: true, Offset: 1, ChunkSize: 1 << 20}, ErrInvalid},
		{"write past chunk size", Update{Offset: 1<<20 - 1, Data: []byte{1, 2}, ChunkSize: 1 << 20}, ErrOutOfRange},
		{"write larger than chunk", Update{Data: make([]byte, 1<<20+1), ChunkSize: 1 << 20}, ErrOutOfRange},
		{"offset past chunk size", Update{Offset: 1<<20 + 1, ChunkSize: 1 << 20}, ErrOutOfRange},
		{"replace larger than chunk", Update{Replace: true, Data: make([]byte, 65<<10), ChunkSize: 64 << 10}, ErrOutOfRange},
		{"truncate past chunk size", Update{Truncate: true, Length: 1<<20 + 1, ChunkSize: 1 << 20}, ErrOutOfRange},
		{"chunk size mismatch", Update{Data: []byte{1}, ChunkSize: 2 << 20}, ErrChunkSizeMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Apply(k, tc.u)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			for _, other := range []error{ErrNotFound, ErrChecksum, ErrNoSpace, ErrReadOnly, ErrOutOfRange, ErrChunkSizeMismatch, ErrInvalid, ErrClosed} {
				if other != tc.want && errors.Is(err, other) {
					t.Fatalf("err %v also matches %v", err, other)
				}
			}
		})
	}
	if _, err := e.Get(tkey(1, 1, 1)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get missing: %v", err)
	}
	h, _ := e.Get(k)
	if _, err := h.ReadAt(make([]byte, 1), -1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative offset: %v", err)
	}
	h.Release()
	if got, _ := readChunk(t, e, k); !bytes.Equal(got, pattern(1, 10)) {
		t.Fatalf("failed updates changed the chunk")
	}
	h, _ = e.Get(k)
	e.Close()
	if _, err := e.Apply(k, Update{Data: []byte{1}, ChunkSize: 1 << 20}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Apply after Close: %v", err)
	}
	if _, err := e.Get(k); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if _, err := h.ReadAt(make([]byte, 1), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}
	if _, _, err := e.List(1, layout.ChunkID{}, layout.ChunkID{}, 0, false); !errors.Is(err, ErrClosed) {
		t.Fatalf("List after Close: %v", err)
	}
	if err := e.Remove(k); !errors.Is(err, ErrClosed) {
		t.Fatalf("Remove after Close: %v", err)
	}
	if _, err := e.Commit(k, 0, 0, false); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close: %v", err)
	}
}

// TestRandomAgainstModel drives random updates on a few keys, checks every
// key against the model after each step and Verify at the end.
func TestRandomAgainstModel(t *testing.T) {
	e := openT(t, t.TempDir(), testOptions())
	r := rand.New(rand.NewPCG(11, 12))
	keys := []Key{tkey(1, 1, 0), tkey(1, 1, 1), tkey(2, 1, 0), tkey(3, 9, 9)}
	models := make([]model, len(keys))
	steps := 1500
	if testing.Short() {
		steps = 300
	}
	for i := range steps {
		j := r.IntN(len(keys))
		var h *Handle
		var hm model
		if r.IntN(3) == 0 { // hold a handle across the update
			if hh, err := e.Get(keys[j]); err == nil {
				h, hm = hh, models[j]
			}
		}
		if u := randomUpdate(r, &models[j], 300<<10, uint32(i+1)); u == nil {
			if err := e.Remove(keys[j]); err != nil {
				t.Fatal(err)
			}
			models[j].remove()
		} else {
			mustApply(t, e, keys[j], *u)
			models[j].apply(*u)
		}
		if r.IntN(5) == 0 && models[j].exists {
			cv := models[j].meta.UpdateVer
			if _, err := e.Commit(keys[j], cv, 2, false); err != nil {
				t.Fatal(err)
			}
			models[j].commit(cv, 2)
		}
		if why := models[j].check(e, keys[j]); why != "" {
			t.Fatalf("step %d key %d: %s", i, j, why)
		}
		if h != nil {
			got, err := readHandle(h)
			if err != nil || !bytes.Equal(got, hm.data) || h.Meta() != hm.meta {
				t.Fatalf("step %d: old handle changed: %v", i, err)
			}
			h.Release()
		}
	}
	rep, err := e.Verify(t.Context())
	if err != nil || !rep.OK() {
		t.Fatalf("Verify: %v %+v", err, rep)
	}
	st := e.Stats()
	var used int64
	for _, m := range models {
		used += int64(len(m.data))
	}
	if st.UsedBytes != used {
		t.Fatalf("UsedBytes %d, want %d", st.UsedBytes, used)
	}
	var blocks int64
	for _, c := range st.Classes {
		blocks += c.UsedBlocks
	}
	var want int64
	for _, m := range models {
		if len(m.data) > 0 {
			want++
		}
	}
	if blocks != want {
		t.Fatalf("used blocks %d, want %d (leak or double use)", blocks, want)
	}
}

// TestNewChunksSpreadOverFiles: chunks written one after another into a
// fresh class land in every data file of the class in turn, so writers of
// new chunks at once do not queue on one file's inode lock.
func TestNewChunksSpreadOverFiles(t *testing.T) {
	e := openT(t, t.TempDir(), testOptions())
	seen := map[uint8]int{}
	for i := range 2 * filesPerClass {
		k := tkey(1, 7, uint64(i))
		mustApply(t, e, k, Update{Data: pattern(uint64(i), 100<<10), ChunkSize: 1 << 20})
		seen[e.current(k).blk.loc.file]++
	}
	for f := range uint8(filesPerClass) {
		if seen[f] != 2 {
			t.Errorf("data file %d got %d of %d new chunks, want 2 (per file: %v)", f, seen[f], 2*filesPerClass, seen)
		}
	}
}

// TestDirectChunksFillOneFile: new chunks written past the page cache take
// the blocks of one data file in order, which keeps them sequential on the
// disk (their writes take the file's lock whatever the file).
func TestDirectChunksFillOneFile(t *testing.T) {
	e := openT(t, t.TempDir(), testOptions())
	var prev blockLoc
	for i := range 2 * filesPerClass {
		k := tkey(1, 8, uint64(i))
		mustApply(t, e, k, Update{Data: pattern(uint64(i), 100<<10), ChunkSize: 1 << 20, Direct: true})
		loc := e.current(k).blk.loc
		if i > 0 && (loc.file != prev.file || loc.index != prev.index+1) {
			t.Fatalf("direct chunk %d in block %v after %v, want the next block of the same file", i, loc, prev)
		}
		prev = loc
	}
}
