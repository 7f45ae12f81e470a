package client

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// diskCache opens a cache with a disk tier of diskBytes under dir (and mem
// bytes of memory), closed at the test's end.
func diskCache(t *testing.T, dir, cluster string, mem, diskBytes int64) *blockCache {
	t.Helper()
	d, err := openDiskTier(dir, diskBytes, cluster)
	if err != nil {
		t.Fatal(err)
	}
	c := newBlockCache(mem).withDisk(d)
	t.Cleanup(c.close)
	return c
}

// regionFiles lists the region files under dir and their allocated bytes.
func regionFiles(t *testing.T, dir string) (files []string, allocated int64) {
	t.Helper()
	filepath.Walk(filepath.Join(dir, "flyfs-cache"), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && strings.Count(info.Name(), "-") == 2 {
			files = append(files, p)
			allocated += info.Sys().(*syscall.Stat_t).Blocks * 512
		}
		return nil
	})
	return files, allocated
}

func TestDiskTier(t *testing.T) {
	k := func(ino, gen, i uint64) blockKey { return blockKey{ino, gen, i} }
	const big = 64 << 20
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, dir string)
	}{
		{"blocks outlive the client that wrote them", func(t *testing.T, dir string) {
			c := diskCache(t, dir, "c1", 0, big)
			c.put(k(7, 3, 0), block('a', CacheBlock), c.begin())
			c.put(k(7, 3, 65), block('b', 100), c.begin()) // the second region, a short last block
			c.drain()
			c.close()
			c = diskCache(t, dir, "c1", 0, big)
			for key, want := range map[blockKey][]byte{k(7, 3, 0): block('a', CacheBlock), k(7, 3, 65): block('b', 100)} {
				if got, ok := c.get(key); !ok || !bytes.Equal(got, want) {
					t.Fatalf("%v after reopening: %v, %d bytes", key, ok, len(got))
				}
			}
			if s := c.stats().Disk; s.Hits != 2 || s.Used != 2*regionHeader+CacheBlock+100 {
				t.Fatalf("stats %+v", s)
			}
		}},
		{"a hit in the disk tier is brought into memory", func(t *testing.T, dir string) {
			c := diskCache(t, dir, "c1", 4*CacheBlock, big)
			c.put(k(1, 1, 0), block('a', 10), c.begin())
			c.drain()
			c.close()
			c = diskCache(t, dir, "c1", 4*CacheBlock, big)
			c.get(k(1, 1, 0))
			if _, ok := c.get(k(1, 1, 0)); !ok {
				t.Fatal("miss")
			}
			if s := c.stats(); s.Memory.Hits != 1 || s.Disk.Hits != 1 {
				t.Fatalf("stats %+v", s)
			}
		}},
		{"another cluster's blocks are dropped", func(t *testing.T, dir string) {
			c := diskCache(t, dir, "c1", 0, big)
			c.put(k(1, 1, 0), block('a', 10), c.begin())
			c.drain()
			c.close()
			c = diskCache(t, dir, "c2", 0, big)
			if _, ok := c.get(k(1, 1, 0)); ok {
				t.Fatal("served a block of another cluster")
			}
			if files, _ := regionFiles(t, dir); len(files) != 0 {
				t.Fatalf("left %v", files)
			}
		}},
		{"a corrupted block file is detected and dropped", func(t *testing.T, dir string) {
			c := diskCache(t, dir, "c1", 0, big)
			c.put(k(1, 1, 2), block('a', CacheBlock), c.begin())
			c.drain()
			files, _ := regionFiles(t, dir)
			f, err := os.OpenFile(files[0], os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("x"), blockAt(2)+1000) // the local disk went bad
			f.Close()
			for range 2 {
				if got, ok := c.get(k(1, 1, 2)); ok {
					t.Fatalf("served a corrupt block (%d bytes)", len(got))
				}
			}
			if s := c.stats().Disk; s.Corrupt != 1 || s.Used != regionHeader {
				t.Fatalf("stats %+v", s)
			}
			c.put(k(1, 1, 2), block('c', CacheBlock), c.begin()) // fetched again
			c.drain()
			if got, ok := c.get(k(1, 1, 2)); !ok || !bytes.Equal(got, block('c', CacheBlock)) {
				t.Fatal("the refetched block is not served")
			}
		}},
		{"a block half-written when the client died is not served", func(t *testing.T, dir string) {
			c := diskCache(t, dir, "c1", 0, big)
			c.put(k(1, 1, 0), block('a', CacheBlock), c.begin())
			c.put(k(1, 1, 1), block('b', CacheBlock), c.begin())
			c.drain()
			c.close()
			// The crash: block 1's slot reached the disk, half its data did not.
			files, _ := regionFiles(t, dir)
			if err := os.Truncate(files[0], blockAt(1)+CacheBlock/2); err != nil {
				t.Fatal(err)
			}
			c = diskCache(t, dir, "c1", 0, big)
			if _, ok := c.get(k(1, 1, 1)); ok {
				t.Fatal("served a half-written block")
			}
			if got, ok := c.get(k(1, 1, 0)); !ok || !bytes.Equal(got, block('a', CacheBlock)) {
				t.Fatal("the whole block beside it is lost")
			}
			if s := c.stats().Disk; s.Corrupt != 1 {
				t.Fatalf("stats %+v", s)
			}
		}},
		{"a file that is not a region is removed when indexing", func(t *testing.T, dir string) {
			c := diskCache(t, dir, "c1", 0, big)
			c.put(k(1, 1, 0), block('a', 10), c.begin())
			c.drain()
			c.close()
			files, _ := regionFiles(t, dir)
			os.WriteFile(files[0], []byte("garbage"), 0o600) // a header lost in a crash
			c = diskCache(t, dir, "c1", 0, big)
			if _, ok := c.get(k(1, 1, 0)); ok {
				t.Fatal("served from a broken region")
			}
			if files, _ := regionFiles(t, dir); len(files) != 0 {
				t.Fatalf("left %v", files)
			}
		}},
		{"eviction keeps the directory under its size", func(t *testing.T, dir string) {
			max := int64(3 * (regionHeader + 4*CacheBlock))
			c := diskCache(t, dir, "c1", 0, max)
			for r := uint64(0); r < 10; r++ {
				for i := uint64(0); i < 4; i++ {
					c.put(k(9, 1, r*regionBlocks+i), block(byte('a'+r), CacheBlock), c.begin())
				}
				c.drain()
				if _, alloc := regionFiles(t, dir); alloc > max {
					t.Fatalf("after region %d: %d bytes allocated, the size is %d", r, alloc, max)
				}
			}
			if s := c.stats().Disk; s.Used > max || s.Evictions != 7 {
				t.Fatalf("stats %+v", s)
			}
			if _, ok := c.get(k(9, 1, 9*regionBlocks)); !ok {
				t.Fatal("the newest region went")
			}
			if _, ok := c.get(k(9, 1, 0)); ok {
				t.Fatal("the oldest region stayed")
			}
		}},
		{"a new version of a file drops the old one's regions", func(t *testing.T, dir string) {
			c := diskCache(t, dir, "c1", 0, big)
			c.put(k(1, 1, 0), block('a', 10), c.begin())
			c.drain()
			c.put(k(1, 2, 0), block('b', 10), c.begin())
			c.drain()
			if files, _ := regionFiles(t, dir); len(files) != 1 || !strings.HasSuffix(files[0], "1-2-0") {
				t.Fatalf("files %v", files)
			}
		}},
		{"a change in flight keeps the inode's blocks out until it ends", func(t *testing.T, dir string) {
			c := diskCache(t, dir, "c1", 4*CacheBlock, big)
			c.put(k(1, 1, 0), block('a', 10), c.begin())
			c.drain()
			done := c.change(1) // a write through this client begins
			if files, _ := regionFiles(t, dir); len(files) != 0 {
				t.Fatalf("the inode's regions stayed: %v", files)
			}
			c.put(k(1, 1, 0), block('b', 10), c.begin()) // fetched while the write is in flight
			c.drain()
			if _, ok := c.get(k(1, 1, 0)); ok {
				t.Fatal("kept a block fetched during the write")
			}
			if files, _ := regionFiles(t, dir); len(files) != 0 {
				t.Fatalf("wrote a block fetched during the write: %v", files)
			}
			before := c.begin()
			done()
			c.put(k(1, 1, 0), block('b', 10), before) // fetched before the write ended
			c.drain()
			if _, ok := c.get(k(1, 1, 0)); ok {
				t.Fatal("kept a block fetched before the write ended")
			}
			c.put(k(1, 1, 0), block('c', 10), c.begin())
			c.drain()
			if got, ok := c.get(k(1, 1, 0)); !ok || string(got) != string(block('c', 10)) {
				t.Fatal("a block fetched after the write is not kept")
			}
		}},
		{"blocks older than the TTL are fetched again", func(t *testing.T, dir string) {
			c := diskCache(t, dir, "c1", 4*CacheBlock, big)
			now := time.Unix(1000, 0)
			c.now, c.ttl, c.disk.ttl = func() time.Time { return now }, time.Minute, time.Minute
			c.put(k(1, 1, 0), block('a', 10), c.begin())
			c.drain()
			now = now.Add(30 * time.Second)
			if _, ok := c.get(k(1, 1, 0)); !ok {
				t.Fatal("miss within the TTL")
			}
			now = now.Add(31 * time.Second)
			if _, ok := c.get(k(1, 1, 0)); ok {
				t.Fatal("served past the TTL")
			}
			if files, _ := regionFiles(t, dir); len(files) != 0 {
				t.Fatalf("an expired region stayed: %v", files)
			}
		}},
		{"one client per directory", func(t *testing.T, dir string) {
			diskCache(t, dir, "c1", 0, big)
			if _, err := openDiskTier(dir, big, "c1"); !errors.Is(err, errCacheBusy) {
				t.Fatalf("a second client opened it: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, t.TempDir()) })
	}
}
