package engine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

func inlineOptions() Options {
	o := testOptions()
	o.InlineMax = 16 << 10
	return o
}

func usedBlocks(e *Engine) int64 {
	var n int64
	for _, c := range e.Stats().Classes {
		n += c.UsedBlocks
	}
	return n
}

// inlineValue is what the metadata store holds as k's inline content.
func inlineValue(t *testing.T, e *Engine, k Key) ([]byte, bool) {
	t.Helper()
	var kb [keyLen]byte
	v, closer, err := e.db.Get(encodeInlineKey(kb[:0], k))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return bytes.Clone(v), true
}

// TestInlineLifecycle: a small chunk lives inline, spills into a block when
// it outgrows InlineMax, keeps its block when cut, comes back inline when
// replaced whole by little, and leaves nothing behind when emptied or
// removed.
func TestInlineLifecycle(t *testing.T) {
	dir := t.TempDir()
	e := openT(t, dir, inlineOptions())
	k := tkey(1, 9, 0)
	const cs = 256 << 10
	want := pattern(1, 4096)
	check := func(step string, inline bool, blocks int64) {
		t.Helper()
		got, m := readChunk(t, e, k)
		if !bytes.Equal(got, want) || m.Len != uint32(len(want)) || m.Checksum != ContentChecksum(want) {
			t.Fatalf("%s: read %d bytes (equal %v), meta %+v", step, len(got), bytes.Equal(got, want), m)
		}
		if v := e.current(k); v.inline != inline {
			t.Fatalf("%s: inline %v, want %v", step, v.inline, inline)
		}
		if _, stored := inlineValue(t, e, k); stored != inline {
			t.Fatalf("%s: inline content stored %v, want %v", step, stored, inline)
		}
		if n := usedBlocks(e); n != blocks {
			t.Fatalf("%s: %d blocks used, want %d", step, n, blocks)
		}
		if st := e.Stats(); st.InlineChunks != map[bool]int64{true: 1, false: 0}[inline] {
			t.Fatalf("%s: Stats.InlineChunks %d", step, st.InlineChunks)
		}
		if rep, err := e.Verify(t.Context()); err != nil || !rep.OK() {
			t.Fatalf("%s: Verify: %v %+v", step, err, rep)
		}
	}
	mustApply(t, e, k, Update{Data: want, ChunkSize: cs, UpdateVer: 1, CommitVer: 1})
	check("4 KiB written", true, 0)

	more := pattern(2, 4096)
	mustApply(t, e, k, Update{Offset: 4096, Data: more, ChunkSize: cs, UpdateVer: 2, CommitVer: 2})
	want = append(want, more...)
	check("appended to 8 KiB", true, 0)

	mid := pattern(3, 100)
	mustApply(t, e, k, Update{Offset: 5000, Data: mid, ChunkSize: cs, UpdateVer: 3, CommitVer: 2})
	copy(want[5000:], mid)
	check("overwritten inside, pending", true, 0)
	if _, err := e.Commit(k, 3, 0, true); err != nil {
		t.Fatal(err)
	}
	check("committed", true, 0)

	mustApply(t, e, k, Update{Truncate: true, Length: 12000, ChunkSize: cs, UpdateVer: 4, CommitVer: 4})
	want = append(want, make([]byte, 12000-len(want))...)
	check("extended with zeros", true, 0)

	big := pattern(4, 30000)
	mustApply(t, e, k, Update{Offset: 10000, Data: big, ChunkSize: cs, UpdateVer: 5, CommitVer: 5, Relaxed: true})
	want = append(want[:10000], big...)
	check("spilled into a block", false, 1)

	mustApply(t, e, k, Update{Truncate: true, Length: 1000, ChunkSize: cs, UpdateVer: 6, CommitVer: 6})
	want = want[:1000]
	check("cut: the block stays", false, 1)

	want = pattern(5, 2000)
	mustApply(t, e, k, Update{Data: want, Replace: true, ChunkSize: cs, UpdateVer: 7, CommitVer: 7})
	check("replaced by 2 KiB: inline again, the block freed", true, 0)

	e.Close()
	e = openT(t, dir, inlineOptions())
	check("reopened", true, 0)
	if v, _ := inlineValue(t, e, k); suiteKey() != nil && bytes.Contains(v, want[:64]) {
		t.Fatal("an encrypted disk holds inline content in the clear")
	}

	mustApply(t, e, k, Update{Truncate: true, Length: 0, ChunkSize: cs, UpdateVer: 8, CommitVer: 8})
	if _, stored := inlineValue(t, e, k); stored {
		t.Fatal("emptied chunk left its inline content")
	}
	mustApply(t, e, k, Update{Data: want, ChunkSize: cs, UpdateVer: 9, CommitVer: 9})
	if err := e.Remove(k); err != nil {
		t.Fatal(err)
	}
	if _, stored := inlineValue(t, e, k); stored {
		t.Fatal("removed chunk left its inline content")
	}
	if st := e.Stats(); st.Chunks != 0 || st.InlineChunks != 0 || st.UsedBytes != 0 {
		t.Fatalf("after removal: %+v", st)
	}
}

// TestInlineAgainstModel: random writes, truncates, replaces and removes
// of a few chunks around the inline bound, each read back against a model
// of its bytes, then again after a reopen; Verify clean and every block in
// use belonging to a chunk that is not inline.
func TestInlineAgainstModel(t *testing.T) {
	dir := t.TempDir()
	e := openT(t, dir, inlineOptions())
	const cs = 96 << 10
	r := rand.New(rand.NewPCG(5, 6))
	models := make([][]byte, 6)
	exists := make([]bool, len(models))
	ver := uint32(0)
	size := func() int {
		if r.IntN(4) == 0 {
			return r.IntN(cs/2) + 1
		}
		return r.IntN(6000) + 1
	}
	for step := range 1500 {
		i := r.IntN(len(models))
		k := tkey(2, 1, uint64(i))
		ver++
		u := Update{ChunkSize: cs, UpdateVer: ver, CommitVer: ver, Relaxed: r.IntN(2) == 0}
		m := models[i]
		switch p := r.IntN(100); {
		case p < 45:
			u.Offset = uint32(r.IntN(min(len(m)+2000, cs-1) + 1))
			u.Data = pattern(uint64(step), min(size(), cs-int(u.Offset)))
			if end := int(u.Offset) + len(u.Data); end > len(m) {
				m = append(m, make([]byte, end-len(m))...)
			}
			copy(m[u.Offset:], u.Data)
		case p < 70:
			u.Truncate, u.Length = true, uint32(min(size(), cs))
			if r.IntN(4) == 0 {
				u.Length = 0
			}
			if int(u.Length) <= len(m) {
				m = m[:u.Length]
			} else {
				m = append(m, make([]byte, int(u.Length)-len(m))...)
			}
		case p < 92:
			u.Replace, u.Data = true, pattern(uint64(step), size())
			m = bytes.Clone(u.Data)
		default:
			if err := e.Remove(k); err != nil {
				t.Fatal(err)
			}
			models[i], exists[i] = nil, false
			continue
		}
		mustApply(t, e, k, u)
		models[i], exists[i] = m, true
		if got, _ := readChunk(t, e, k); !bytes.Equal(got, m) {
			t.Fatalf("step %d: chunk %d reads %d bytes, the model %d (equal %v)", step, i, len(got), len(m), bytes.Equal(got, m))
		}
	}
	check := func(when string) {
		t.Helper()
		var blocks int64
		for i, m := range models {
			k := tkey(2, 1, uint64(i))
			if !exists[i] {
				if _, err := e.Get(k); !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: removed chunk %d: %v", when, i, err)
				}
				continue
			}
			if got, _ := readChunk(t, e, k); !bytes.Equal(got, m) {
				t.Fatalf("%s: chunk %d differs from the model", when, i)
			}
			if v := e.current(k); v.blk != nil {
				blocks++
			}
		}
		if n := usedBlocks(e); n != blocks {
			t.Fatalf("%s: %d blocks used by %d chunks with a block", when, n, blocks)
		}
		if rep, err := e.Verify(t.Context()); err != nil || !rep.OK() {
			t.Fatalf("%s: Verify: %v %+v", when, err, rep)
		}
	}
	check("end")
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = openT(t, dir, inlineOptions())
	check("reopened")
}

// TestInlineCorruptContent: inline content that does not match its record
// reads as ErrChecksum, counted, never as wrong bytes.
func TestInlineCorruptContent(t *testing.T) {
	e := openT(t, t.TempDir(), inlineOptions())
	k := tkey(3, 1, 0)
	mustApply(t, e, k, Update{Data: pattern(7, 3000), ChunkSize: 1 << 20, UpdateVer: 1, CommitVer: 1})
	v, _ := inlineValue(t, e, k)
	v[100] ^= 0x40
	var kb [keyLen]byte
	if err := e.db.Set(encodeInlineKey(kb[:0], k), v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(k); !errors.Is(err, ErrChecksum) {
		t.Fatalf("Get of corrupt inline content: %v, want ErrChecksum", err)
	}
	if st := e.Stats(); st.ChecksumErrors == 0 {
		t.Fatal("the corruption was not counted")
	}
	if rep, _ := e.Verify(t.Context()); rep.ChecksumErrors != 1 {
		t.Fatalf("Verify: %+v", rep)
	}
	// A whole replace repairs it, as it repairs a corrupt block.
	mustApply(t, e, k, Update{Data: pattern(8, 3000), Replace: true, ChunkSize: 1 << 20, UpdateVer: 2, CommitVer: 2})
	if got, _ := readChunk(t, e, k); !bytes.Equal(got, pattern(8, 3000)) {
		t.Fatal("replace did not repair the chunk")
	}
}
