package layout

import "testing"

func TestChunkIDNext(t *testing.T) {
	last := ChunkID{}
	for i := range last {
		last[i] = 0xff
	}
	cases := []struct {
		name string
		c    ChunkID
		want ChunkID
	}{
		{"next index", MakeChunkID(7, 3), MakeChunkID(7, 4)},
		{"last index of an inode carries into the next inode", MakeChunkID(7, ^uint64(0)), MakeChunkID(8, 0)},
		{"zero", ChunkID{}, MakeChunkID(0, 1)},
		{"the last id wraps to zero", last, ChunkID{}},
	}
	for _, c := range cases {
		if got := c.c.Next(); got != c.want {
			t.Errorf("%s: %v.Next() = %v, want %v", c.name, c.c, got, c.want)
		}
	}
}

func TestChunkIDString(t *testing.T) {
	if got, want := MakeChunkID(0x2a, 12).String(), "000000000000002a:12"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
