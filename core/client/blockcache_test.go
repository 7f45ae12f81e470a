package client

import (
	"bytes"
	"testing"
)

func block(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

func TestBlockCache(t *testing.T) {
	k := func(ino, gen, i uint64) blockKey { return blockKey{ino, gen, i} }
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, c *blockCache)
	}{
		{"a block put is served under its key only", func(t *testing.T, c *blockCache) {
			c.put(k(1, 5, 0), block('a', 100), c.begin())
			if got, ok := c.get(k(1, 5, 0)); !ok || !bytes.Equal(got, block('a', 100)) {
				t.Fatalf("hit: %v %q", ok, got)
			}
			if _, ok := c.get(k(1, 6, 0)); ok {
				t.Fatal("served under another Gen")
			}
			if s := c.stats().Memory; s.Hits != 1 || s.Misses != 1 || s.Used != 100 {
				t.Fatalf("stats %+v", s)
			}
		}},
		{"a corrupt block is dropped, not served", func(t *testing.T, c *blockCache) {
			data := block('a', 100)
			c.put(k(1, 1, 0), data, c.begin())
			data[7] ^= 1 // memory went bad behind the cache's back
			if got, ok := c.get(k(1, 1, 0)); ok {
				t.Fatalf("served a corrupt block: %q", got)
			}
			if s := c.stats().Memory; s.Corrupt != 1 || s.Used != 0 {
				t.Fatalf("stats %+v", s)
			}
		}},
		{"the least recently used block goes first", func(t *testing.T, c *blockCache) {
			for i := uint64(0); i < 3; i++ {
				c.put(k(1, 1, i), block('a', CacheBlock), c.begin())
			}
			c.get(k(1, 1, 0)) // 1 is now the oldest
			c.put(k(2, 1, 0), block('b', CacheBlock), c.begin())
			if _, ok := c.get(k(1, 1, 1)); ok {
				t.Fatal("the oldest block stayed")
			}
			for _, key := range []blockKey{k(1, 1, 0), k(1, 1, 2), k(2, 1, 0)} {
				if _, ok := c.get(key); !ok {
					t.Fatalf("%v evicted", key)
				}
			}
			if s := c.stats().Memory; s.Evictions != 1 || s.Used != 3*CacheBlock {
				t.Fatalf("stats %+v", s)
			}
		}},
		{"a local change drops the inode's blocks and the fetches begun before it", func(t *testing.T, c *blockCache) {
			c.put(k(1, 1, 0), block('a', 10), c.begin())
			c.put(k(2, 1, 0), block('b', 10), c.begin())
			before := c.begin()
			c.changed(1)
			if _, ok := c.get(k(1, 1, 0)); ok {
				t.Fatal("a block of the changed inode stayed")
			}
			if _, ok := c.get(k(2, 1, 0)); !ok {
				t.Fatal("another inode's block went")
			}
			c.put(k(1, 1, 1), block('a', 10), before) // fetched across the change
			if _, ok := c.get(k(1, 1, 1)); ok {
				t.Fatal("a fetch begun before the change was kept")
			}
			c.put(k(1, 1, 1), block('c', 10), c.begin())
			if _, ok := c.get(k(1, 1, 1)); !ok {
				t.Fatal("a fetch begun after the change was not kept")
			}
		}},
		{"forgetting old changes rejects every older fetch", func(t *testing.T, c *blockCache) {
			old := c.begin()
			for ino := uint64(100); ino < 100+maxChanged+1; ino++ {
				c.changed(ino)
			}
			c.put(k(1, 1, 0), block('a', 10), old)
			if _, ok := c.get(k(1, 1, 0)); ok {
				t.Fatal("a fetch older than the forgotten changes was kept")
			}
		}},
		{"a block larger than the budget is not kept", func(t *testing.T, c *blockCache) {
			c.put(k(1, 1, 0), block('a', 3*CacheBlock+1), c.begin())
			if s := c.stats().Memory; s.Used != 0 {
				t.Fatalf("stats %+v", s)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newBlockCache(3*CacheBlock)) })
	}
}

func TestCopyOverlap(t *testing.T) {
	p := make([]byte, 10)
	copyOverlap(p, 100, []byte("abcdefghij"), 95) // the block's bytes 5..9 land at p[0:5]
	if string(p[:5]) != "fghij" || p[5] != 0 {
		t.Fatalf("%q", p)
	}
	copyOverlap(p, 100, []byte("XYZ"), 108)
	if string(p[8:]) != "XY" {
		t.Fatalf("%q", p)
	}
	copyOverlap(p, 100, []byte("no"), 200)
}
