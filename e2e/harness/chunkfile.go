package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// FindChunkBlock scans a storage node's data files (diskDir/data/*) for the
// one block holding the chunk whose content starts with head, and returns
// the file and offset; blocks start at multiples of 64 KiB, the smallest
// block size (see storaged/engine's layout). Fault tests flip bytes there.
func FindChunkBlock(tb testing.TB, diskDir string, head []byte) (string, int64) {
	tb.Helper()
	files, _ := filepath.Glob(filepath.Join(diskDir, "data", "*"))
	sort.Strings(files)
	var hits []string
	var file string
	var off int64
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		for o := 0; o+len(head) <= len(b); o += 64 << 10 {
			if bytes.Equal(b[o:o+len(head)], head) {
				hits = append(hits, fmt.Sprintf("%s@%d", filepath.Base(name), o))
				file, off = name, int64(o)
			}
		}
	}
	if len(hits) != 1 {
		tb.Fatalf("chunk content found %d times in %s/data (%s): want exactly one block", len(hits), diskDir, strings.Join(hits, " "))
	}
	return file, off
}
