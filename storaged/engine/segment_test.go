package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// A disk's segment size is fixed when the disk is created: reopened with
// another option it keeps its own, and the same content has the same chunk
// checksum on disks of either size.
func TestSegmentSizeOfTheDisk(t *testing.T) {
	data := pattern(7, 300<<10+123)
	k := tkey(1, 1, 0)
	sums := map[int64]uint32{}
	for _, seg := range []int64{DefaultSegmentSize, 16 << 10, MaxSegmentSize} {
		dir := t.TempDir()
		opts := testOptions()
		opts.SegmentSize = int(seg)
		e, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		m := mustApply(t, e, k, Update{Data: data, ChunkSize: 1 << 20, UpdateVer: 1, CommitVer: 1})
		sums[seg] = m.Checksum
		e.Close()

		other := testOptions()
		other.SegmentSize = MinSegmentSize * 2
		if int(seg) == other.SegmentSize {
			other.SegmentSize = MinSegmentSize
		}
		e = openT(t, dir, other)
		if got := e.SegmentSize(); int64(got) != seg {
			t.Fatalf("disk created with %d-byte segments reopens with %d", seg, got)
		}
		if got, _ := readChunk(t, e, k); !bytes.Equal(got, data) {
			t.Fatalf("%d-byte segments: read back differs", seg)
		}
	}
	for seg, sum := range sums {
		if sum != ContentChecksum(data) {
			t.Errorf("%d-byte segments: chunk checksum %08x, ContentChecksum %08x", seg, sum, ContentChecksum(data))
		}
	}
}

// A format-1 disk (64 KiB segments, the version alone in its format value)
// opens with 64 KiB segments, reads, verifies and takes updates.
func TestLegacyFormatDisk(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.SegmentSize = MaxSegmentSize
	e, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	k := tkey(1, 1, 0)
	data := pattern(3, 200<<10)
	mustApply(t, e, k, Update{Data: data, ChunkSize: 1 << 20, UpdateVer: 1, CommitVer: 1})
	e.Close()
	db, err := pebble.Open(filepath.Join(dir, "meta"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set(formatKey, binary.LittleEndian.AppendUint32(nil, formatLegacy), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()

	e = openT(t, dir, testOptions())
	if got := e.SegmentSize(); got != MaxSegmentSize {
		t.Fatalf("format-1 disk opens with %d-byte segments", got)
	}
	mustApply(t, e, k, Update{Offset: 70 << 10, Data: []byte("overwritten"), ChunkSize: 1 << 20, UpdateVer: 2, CommitVer: 2})
	copy(data[70<<10:], "overwritten")
	if got, _ := readChunk(t, e, k); !bytes.Equal(got, data) {
		t.Fatal("format-1 disk: read back after an update differs")
	}
	if rep, err := e.Verify(t.Context()); err != nil || !rep.OK() {
		t.Fatalf("Verify: %v %+v", err, rep)
	}
}

func TestSegmentSizeRefused(t *testing.T) {
	for _, seg := range []int{1024, 6 << 10, 128 << 10} {
		opts := testOptions()
		opts.SegmentSize = seg
		if e, err := Open(t.TempDir(), opts); !errors.Is(err, ErrInvalid) {
			if err == nil {
				e.Close()
			}
			t.Errorf("segment size %d: Open = %v, want ErrInvalid", seg, err)
		}
	}
}
