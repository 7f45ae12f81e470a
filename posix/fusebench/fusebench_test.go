package fusebench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sizeFromEnv reads FLYFS_BENCH_SIZE (bytes, or with a K/M/G suffix).
func sizeFromEnv(def int64) int64 {
	s := strings.ToUpper(strings.TrimSpace(os.Getenv("FLYFS_BENCH_SIZE")))
	if s == "" {
		return def
	}
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return def
	}
	return n * mult
}

func skipWithoutFuse(tb testing.TB) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		tb.Skip("no /dev/fuse")
	}
	if os.Getuid() != 0 {
		tb.Skip("the loopback baseline mounts directly, which needs root")
	}
}

// TestRunSmall runs every measurement on a small file: the bench itself
// works (figures are printed, not judged).
func TestRunSmall(t *testing.T) {
	skipWithoutFuse(t)
	t.Setenv("AWS_CA_BUNDLE", "")
	var out strings.Builder
	rows, err := Run(context.Background(), Config{Size: 32 << 20, Duration: 300 * time.Millisecond, Creates: 160, NoSync: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.This <= 0 || r.Baseline <= 0 {
			t.Errorf("%s: no figure (%v vs %v)", r.Name, r.This, r.Baseline)
		}
	}
}

// BenchmarkFuse prints the whole table once; FLYFS_BENCH_SIZE sets the file
// size (default 2G).
func BenchmarkFuse(b *testing.B) {
	skipWithoutFuse(b)
	for range b.N {
		if _, err := Run(context.Background(), Config{Size: sizeFromEnv(2 << 30), NoSync: os.Getenv("FLYFS_BENCH_NOSYNC") != ""}, os.Stdout); err != nil {
			b.Fatal(err)
		}
	}
}
