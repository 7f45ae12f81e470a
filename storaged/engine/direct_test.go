package engine

import (
	"bytes"
	"testing"
)

// Content written direct reads back as written, whatever the alignment of
// its memory, offset and length; what cannot go direct goes through the
// page cache. On a file system that refuses O_DIRECT everything takes the
// page cache, and the rows still hold.
func TestDirectWrites(t *testing.T) {
	dir := t.TempDir()
	e := openT(t, dir, Options{ReserveBytes: -1})
	probe := e.alloc.classes[0].files[0].direct
	if probe == nil {
		t.Logf("%s refuses O_DIRECT: only the page-cache path runs here", dir)
	}
	big := pattern(7, 3<<20+100)
	rows := []struct {
		name   string
		data   []byte
		off    uint32
		direct bool
		cached bool // Update.Direct unset
	}{
		{name: "aligned 1 MiB", data: big[:1<<20], direct: true},
		{name: "memory not aligned", data: big[1 : 1<<20+1], direct: true},
		{name: "length not aligned", data: big[:3<<20+100], direct: true},
		{name: "below the direct minimum", data: big[:64<<10]},
		{name: "offset not aligned (its whole segments go)", data: big[:1<<20], off: 100, direct: true},
		{name: "not asked for", data: big[:1<<20], cached: true},
	}
	for i, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			k := tkey(1, uint64(i), 0)
			before := directBytes(e)
			mustApply(t, e, k, Update{Offset: row.off, Data: row.data, ChunkSize: 4 << 20, Direct: !row.cached})
			got, _ := readChunk(t, e, k)
			want := append(make([]byte, row.off), row.data...)
			if !bytes.Equal(got, want) {
				t.Fatalf("read back %d bytes, not the %d written", len(got), len(want))
			}
			wentDirect := directBytes(e) > before
			if probe != nil && wentDirect != row.direct {
				t.Fatalf("went direct: %v, want %v", wentDirect, row.direct)
			}
		})
	}
}

func directBytes(e *Engine) int64 {
	var n int64
	for c := range e.alloc.classes {
		for _, d := range e.alloc.classes[c].files {
			if d != nil && d.direct != nil {
				n += d.direct.wrote.Load()
			}
		}
	}
	return n
}
