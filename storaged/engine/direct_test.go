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

// A read past the page cache returns what was written, however it was
// written (direct, or buffered and not yet on the disk), whatever the
// alignment of the range and of the memory it lands in; on an encrypted
// disk it decrypts the same. Only a large aligned run goes direct.
func TestDirectReads(t *testing.T) {
	for _, enc := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "encrypted"}[enc], func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{ReserveBytes: -1}
			if enc {
				opts.EncryptionKey = bytes.Repeat([]byte{7}, 32)
			}
			e := openT(t, dir, opts)
			probe := e.alloc.classes[0].files[0].direct
			if probe == nil {
				t.Logf("%s refuses O_DIRECT: only the page-cache path runs here", dir)
			}
			data := pattern(9, 4<<20)
			written := map[bool]Key{true: tkey(2, 1, 0), false: tkey(2, 2, 0)}
			for direct, k := range written {
				mustApply(t, e, k, Update{Data: data, ChunkSize: 4 << 20, Direct: direct})
			}
			buf := make([]byte, 4<<20+1)
			rows := []struct {
				name    string
				off, n  int
				unalign bool // the memory starts off a 4 KiB boundary
				direct  bool
			}{
				{name: "whole chunk", n: 4 << 20, direct: true},
				{name: "memory not aligned", n: 1 << 20, unalign: true, direct: true},
				{name: "offset not aligned (its whole segments go)", off: 100, n: 2 << 20, direct: true},
				{name: "length not aligned", off: 4096, n: 1<<20 + 7, direct: true},
				{name: "below the direct minimum", off: 8192, n: 64 << 10},
				{name: "past the end", off: 3 << 20, n: 2 << 20, direct: true},
			}
			for direct, k := range written {
				for _, row := range rows {
					t.Run(map[bool]string{true: "written direct/", false: "written cached/"}[direct]+row.name, func(t *testing.T) {
						h, err := e.Get(k)
						if err != nil {
							t.Fatal(err)
						}
						defer h.Release()
						forgetRereads(e) // each row reads the chunk for the first time
						p := alignedBuffer(len(buf))
						if row.unalign {
							p = p[1:]
						}
						p = p[:row.n]
						before := directReadBytes(e)
						n, err := h.ReadAtUncached(p, int64(row.off))
						want := data[row.off:min(row.off+row.n, len(data))]
						if len(want) < row.n && err == nil {
							t.Fatalf("a read past the end: %d bytes and no io.EOF", n)
						}
						if !bytes.Equal(p[:n], want) {
							t.Fatalf("read %d bytes (%v), not the %d written", n, err, len(want))
						}
						wentDirect := directReadBytes(e) > before
						if probe != nil && wentDirect != row.direct {
							t.Fatalf("went direct: %v, want %v", wentDirect, row.direct)
						}
					})
				}
			}
		})
	}
}

func directReadBytes(e *Engine) int64 {
	var n int64
	for c := range e.alloc.classes {
		for _, d := range e.alloc.classes[c].files {
			if d != nil && d.direct != nil {
				n += d.direct.readN.Load()
			}
		}
	}
	return n
}
