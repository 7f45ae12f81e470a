package engine

import (
	"testing"
)

func forgetRereads(e *Engine) {
	for i := range e.rereads.slots {
		e.rereads.slots[i].Store(0)
	}
}

func TestRereadsTable(t *testing.T) {
	var r rereads
	a, b := uint64(5), uint64(5+rereadSlots) // one slot
	steps := []struct {
		name string
		h    uint64
		want bool
	}{
		{"first read of a", a, false},
		{"a again", a, true},
		{"a a third time", a, true},
		{"b takes a's slot", b, false},
		{"a is forgotten", a, false},
		{"then remembered", a, true},
		{"a hash of 0 is remembered too", 0, false},
		{"0 again", 0, true},
		{"another slot", 7, false},
		{"a kept its slot", a, true},
	}
	for _, s := range steps {
		if got := r.again(s.h); got != s.want {
			t.Fatalf("%s: again(%d) = %v, want %v", s.name, s.h, got, s.want)
		}
	}
}

// A chunk read past the cache goes to the disk direct the first time and
// through the page cache when it is read again, until a chunk whose hash
// takes its slot is read direct.
func TestRereadsGoThroughTheCache(t *testing.T) {
	e := openT(t, t.TempDir(), Options{ReserveBytes: -1})
	if e.alloc.classes[0].files[0].direct == nil {
		t.Skip("the test directory's file system refuses O_DIRECT: reads never go direct here")
	}
	data := pattern(3, 1<<20)
	k := tkey(2, 1, 0)
	mustApply(t, e, k, Update{Data: data, ChunkSize: 1 << 20, Direct: true})
	var other Key
	for i := uint64(2); ; i++ {
		other = tkey(2, i, 0)
		if keyHash(other)%rereadSlots == keyHash(k)%rereadSlots {
			break
		}
	}
	mustApply(t, e, other, Update{Data: data, ChunkSize: 1 << 20, Direct: true})

	p := alignedBuffer(1 << 20)
	read := func(k Key) bool {
		t.Helper()
		h, err := e.Get(k)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Release()
		before := directReadBytes(e)
		if n, err := h.ReadAtUncached(p, 0); n != len(data) || err != nil {
			t.Fatalf("read %d bytes: %v", n, err)
		}
		return directReadBytes(e) > before
	}
	for _, step := range []struct {
		name   string
		k      Key
		direct bool
	}{
		{"first read", k, true},
		{"read again", k, false},
		{"and again", k, false},
		{"a chunk of the same slot", other, true},
		{"the first, forgotten", k, true},
	} {
		if got := read(step.k); got != step.direct {
			t.Fatalf("%s: went direct %v, want %v", step.name, got, step.direct)
		}
	}
}
