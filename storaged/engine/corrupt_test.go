package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// flipByte inverts one byte of content position pos of the block at loc.
func flipByte(t *testing.T, dir string, loc blockLoc, pos int64) {
	t.Helper()
	name := filepath.Join(dir, "data", className(loc.class)+"."+string(rune('0'+loc.file)))
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, loc.offset()+pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xFF
	if _, err := f.WriteAt(b, loc.offset()+pos); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptData(t *testing.T) {
	for _, seg := range []int64{DefaultSegmentSize, MaxSegmentSize} {
		t.Run(fmt.Sprintf("segment %d", seg), func(t *testing.T) { testCorruptData(t, seg) })
	}
}

func testCorruptData(t *testing.T, seg int64) {
	dir := t.TempDir()
	opts := testOptions()
	opts.SegmentSize = int(seg)
	e := openT(t, dir, opts)
	k := tkey(1, 1, 0)
	data := pattern(1, 300<<10) // the last segment partial with 64 KiB segments
	mustApply(t, e, k, Update{Data: data, ChunkSize: 1 << 20, UpdateVer: 1, CommitVer: 1})
	loc := e.current(k).blk.loc
	flipByte(t, dir, loc, 2*seg+100) // segment 2

	h, err := e.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	for _, tc := range []struct {
		name    string
		off, n  int64
		corrupt bool
	}{
		{"whole chunk", 0, 300 << 10, true},
		{"inside the bad segment", 2*seg + seg/4, seg / 2, true},
		{"byte at the end of the previous segment", 2*seg - 1, 1, false},
		{"run ending before the bad segment", 0, 2 * seg, false},
		{"partial read into the bad segment", seg + 5, seg, true},
		{"after the bad segment", 3 * seg, 100 << 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.Stats().ChecksumErrors
			p := make([]byte, tc.n)
			n, err := h.ReadAt(p, tc.off)
			if tc.corrupt {
				if !errors.Is(err, ErrChecksum) || n != 0 {
					t.Fatalf("ReadAt = %d, %v; want ErrChecksum", n, err)
				}
				if !bytes.Equal(p, make([]byte, tc.n)) {
					t.Fatalf("corrupt read left data in the buffer")
				}
				if got := e.Stats().ChecksumErrors; got != before+1 {
					t.Fatalf("ChecksumErrors %d, want %d", got, before+1)
				}
				return
			}
			if err != nil || !bytes.Equal(p[:n], data[tc.off:tc.off+tc.n]) {
				t.Fatalf("clean read = %d, %v", n, err)
			}
		})
	}

	// An update that needs the bad segment refuses to launder it...
	if _, err := e.Apply(k, Update{Offset: uint32(2*seg + 10), Data: []byte("x"), ChunkSize: 1 << 20}); !errors.Is(err, ErrChecksum) {
		t.Fatalf("partial overwrite of a corrupt segment: %v", err)
	}
	// ...one that only copies it keeps it detectable...
	mustApply(t, e, k, Update{Offset: 10, Data: []byte("y"), ChunkSize: 1 << 20, UpdateVer: 2, CommitVer: 2})
	if _, err := readHandleErr(e, k); !errors.Is(err, ErrChecksum) {
		t.Fatalf("corruption lost by COW copy: %v", err)
	}
	// ...and a replace repairs it.
	mustApply(t, e, k, Update{Replace: true, Data: data, ChunkSize: 1 << 20, UpdateVer: 3, CommitVer: 3})
	if got, _ := readChunk(t, e, k); !bytes.Equal(got, data) {
		t.Fatal("replace did not repair")
	}
	if e.Stats().ReadOnly {
		t.Fatal("corruption made the engine read-only")
	}
	rep, err := e.Verify(t.Context())
	if err != nil || !rep.OK() {
		t.Fatalf("Verify after repair: %v %+v", err, rep)
	}
}

func readHandleErr(e *Engine, k Key) ([]byte, error) {
	h, err := e.Get(k)
	if err != nil {
		return nil, err
	}
	defer h.Release()
	return readHandle(h)
}

func TestCorruptDataVerify(t *testing.T) {
	dir := t.TempDir()
	e := openT(t, dir, testOptions())
	k := tkey(1, 1, 0)
	mustApply(t, e, k, Update{Data: pattern(1, 100<<10), ChunkSize: 1 << 20})
	flipByte(t, dir, e.current(k).blk.loc, 99<<10)
	rep, err := e.Verify(t.Context())
	if err != nil || rep.ChecksumErrors != 1 || rep.OK() {
		t.Fatalf("Verify = %+v, %v; want one checksum error", rep, err)
	}
}

// Corrupt metadata must not panic or fail Open: the key reports ErrChecksum
// and can be repaired by a replace; a record claiming another chunk's block
// is refused the same way.
func TestCorruptRecords(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	good, garbled, thief, truncated, far := tkey(1, 1, 0), tkey(1, 2, 0), tkey(1, 3, 0), tkey(1, 4, 0), tkey(1, 5, 0)
	data := pattern(1, 100<<10)
	mustApply(t, e, good, Update{Data: data, ChunkSize: 1 << 20})
	mustApply(t, e, garbled, Update{Data: data, ChunkSize: 1 << 20})
	goodLoc := e.current(good).blk.loc
	e.Close()

	db, err := pebble.Open(filepath.Join(dir, "meta"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kb := func(k Key) []byte { return encodeKey(nil, k) }
	v, closer, err := db.Get(kb(garbled))
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), v...)
	closer.Close()
	bad[10] ^= 1
	stolen := record{meta: Meta{Len: 5, ChunkSize: 1 << 20}, loc: goodLoc, crcs: []uint32{crc([]byte("hello"))}}
	stolen.meta.Checksum = chunkChecksum(5, stolen.crcs, DefaultSegmentSize)
	beyond := stolen
	beyond.loc.index = 1 << 30 // past the end of the data file
	for _, kv := range []struct {
		k Key
		v []byte
	}{{garbled, bad}, {thief, stolen.encode(nil)}, {truncated, []byte{1, 2, 3}}, {far, beyond.encode(nil)}} {
		if err := db.Set(kb(kv.k), kv.v, pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	e = openT(t, dir, testOptions())
	if got, _ := readChunk(t, e, good); !bytes.Equal(got, data) {
		t.Fatal("good chunk damaged")
	}
	for _, k := range []Key{garbled, thief, truncated, far} {
		if _, err := e.Get(k); !errors.Is(err, ErrChecksum) {
			t.Fatalf("Get(%v) = %v, want ErrChecksum", k, err)
		}
		if _, err := e.Apply(k, Update{Offset: 1, Data: []byte{1}, ChunkSize: 1 << 20}); !errors.Is(err, ErrChecksum) {
			t.Fatalf("partial write to corrupt %v: %v", k, err)
		}
	}
	if st := e.Stats(); st.CorruptRecords != 4 || st.Chunks != 1 {
		t.Fatalf("stats %+v", st)
	}
	rep, err := e.Verify(t.Context())
	// Verify sees the shared block, the undecodable records, and the
	// records the index does not hold.
	if err != nil || rep.CorruptRecords != 2 || rep.SharedBlocks != 1 || rep.Inconsistent < 2 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
	mustApply(t, e, garbled, Update{Replace: true, Data: []byte("fixed"), ChunkSize: 1 << 20})
	if err := e.Remove(thief); err != nil {
		t.Fatal(err)
	}
	for _, k := range []Key{truncated, far} {
		if err := e.Remove(k); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := readChunk(t, e, garbled); string(got) != "fixed" {
		t.Fatalf("repaired chunk = %q", got)
	}
	if rep, err := e.Verify(t.Context()); err != nil || !rep.OK() {
		t.Fatalf("Verify after repair = %+v, %v", rep, err)
	}
}

// Handle.Verify finds a flipped byte anywhere in a chunk (past its first
// 16-segment stretch too), counts it, and passes clean chunks.
func TestHandleVerify(t *testing.T) {
	dir := t.TempDir()
	e := openT(t, dir, testOptions())
	clean, bad, empty := tkey(1, 1, 0), tkey(1, 2, 0), tkey(1, 3, 0)
	mustApply(t, e, clean, Update{Data: pattern(1, 1<<20+77), ChunkSize: 2 << 20})
	mustApply(t, e, bad, Update{Data: pattern(2, 1<<20+77), ChunkSize: 2 << 20})
	mustApply(t, e, empty, Update{Truncate: true, ChunkSize: 2 << 20})
	flipByte(t, dir, e.current(bad).blk.loc, 1<<20+50) // the 17th segment: the second pread
	check := func(k Key) error {
		h, err := e.Get(k)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Release()
		return h.Verify()
	}
	for _, k := range []Key{clean, empty} {
		if err := check(k); err != nil {
			t.Fatalf("Verify(%v) = %v", k, err)
		}
	}
	before := e.Stats().ChecksumErrors
	if err := check(bad); !errors.Is(err, ErrChecksum) {
		t.Fatalf("Verify of a flipped chunk = %v, want ErrChecksum", err)
	}
	if got := e.Stats().ChecksumErrors; got != before+1 {
		t.Fatalf("ChecksumErrors %d, want %d", got, before+1)
	}
	h, _ := e.Get(clean)
	h.Release()
	if err := h.Verify(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Verify after Release = %v", err)
	}
}
