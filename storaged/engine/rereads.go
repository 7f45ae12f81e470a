package engine

import "sync/atomic"

// Re-reads. A read past the page cache (ReadAtUncached) is right for a
// chunk read once: from the disk direct it costs half the CPU of a read
// that fills the cache. A chunk read again soon is better read through the
// cache: that read fills it, and the ones after it copy from memory at a
// third of a direct read's cost (on the machines we measure, with the
// virtual disk's own work counted). So the engine remembers the chunks it
// read direct lately, and reads one it remembers through the cache.
//
// The memory is a table of rereadSlots key hashes, each key in the one slot
// its hash names: a newer chunk whose hash names the same slot takes it, so
// the table remembers about the last rereadSlots chunks read direct (16 GiB
// of them at the default 1 MiB chunk), with no lock and no clock.

// rereadSlots is the table's size, a power of two.
const rereadSlots = 1 << 14

type rereads struct {
	slots [rereadSlots]atomic.Uint64
}

// again notes a read past the cache of the key whose hash is h and reports
// whether the table held it already: a re-read, to go through the cache.
func (r *rereads) again(h uint64) bool {
	if h == 0 {
		h = 1 // 0 is an empty slot
	}
	return r.slots[h%rereadSlots].Swap(h) == h
}
