package fusemount

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

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
	rows, err := Run(context.Background(), Config{Size: 32 << 20, Duration: 300 * time.Millisecond, Creates: 160, SmallFiles: 50, NoSync: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	// 2 sequential, 3 buffered reads, 5 small-file steps, native, creates.
	if len(rows) != 12 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.This <= 0 || r.Baseline <= 0 {
			t.Errorf("%s: no figure (%v vs %v)", r.Name, r.This, r.Baseline)
		}
	}
}
