// Command example writes a file through a flyfs mount with the native
// async API, reads it back in one batch of unaligned reads, and checks it:
//
//	go run ./posix/native/example -mount /mnt/flyfs
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/flyfs/flyfs/posix/native"
)

func main() {
	mount := flag.String("mount", "", "a flyfs mount point (required)")
	name := flag.String("file", "native-example.bin", "file to write, relative to the mount")
	ios := flag.Int("ios", 64, "IOs per batch")
	size := flag.Int("size", 100_003, "bytes per IO (need not be aligned)")
	flag.Parse()
	if *mount == "" {
		fmt.Fprintln(os.Stderr, "usage: example -mount DIR [-file NAME] [-ios N] [-size BYTES]")
		os.Exit(2)
	}
	if err := run(*mount, filepath.Join(*mount, *name), *ios, *size); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run(mount, path string, ios, size int) error {
	// The file is opened through the mount; the ring names it by inode.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	file, err := native.FileOf(mount, f)
	if err != nil {
		return err
	}
	iov, err := native.NewIov(mount, 2*ios*size)
	if err != nil {
		return err
	}
	defer iov.Close()
	ring, err := native.NewRing(mount, ios, ios)
	if err != nil {
		return err
	}
	defer ring.Close()

	// Fill the first half of the buffer and write it as ios IOs.
	src := iov.Buf[:ios*size]
	for i := range src {
		src[i] = byte(i*7 + i/size)
	}
	start := time.Now()
	for i := range ios {
		if err := ring.PrepWrite(iov, i*size, size, file, int64(i*size), uint64(i)); err != nil {
			return err
		}
	}
	ring.Submit()
	if err := reap(ring, ios); err != nil {
		return fmt.Errorf("writes: %w", err)
	}
	wrote := time.Since(start)

	// Read it back into the second half, in reverse order for good measure.
	dst := iov.Buf[ios*size:]
	start = time.Now()
	for i := ios - 1; i >= 0; i-- {
		if err := ring.PrepRead(iov, ios*size+i*size, size, file, int64(i*size), uint64(i)); err != nil {
			return err
		}
	}
	ring.Submit()
	if err := reap(ring, ios); err != nil {
		return fmt.Errorf("reads: %w", err)
	}
	read := time.Since(start)
	if !bytes.Equal(src, dst) {
		return fmt.Errorf("read back other bytes than written")
	}
	total := float64(ios*size) / (1 << 20)
	fmt.Printf("%d writes and %d reads of %d bytes each through %s: write %.1f MiB in %v, read in %v; contents match\n",
		ios, ios, size, mount, total, wrote.Round(time.Microsecond), read.Round(time.Microsecond))
	return nil
}

// reap waits for n completions and checks each moved a whole IO.
func reap(ring *native.Ring, n int) error {
	cqes := make([]native.Completion, n)
	for done := 0; done < n; {
		k, err := ring.Wait(cqes, n-done, 30*time.Second)
		if err != nil {
			return err
		}
		if k == 0 {
			return fmt.Errorf("no completion within 30 s")
		}
		for _, c := range cqes[:k] {
			if c.Result < 0 {
				return fmt.Errorf("io %d failed: errno %d", c.Userdata, -c.Result)
			}
		}
		done += k
	}
	return nil
}
