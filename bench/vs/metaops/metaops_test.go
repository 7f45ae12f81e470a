package metaops_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/flyfs/flyfs/bench/vs/metaops"
)

// TestRunPrintsTable runs a tiny bench; it checks the report, never speed.
func TestRunPrintsTable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clusters")
	}
	var out bytes.Buffer
	rows, err := metaops.Run(context.Background(), metaops.Config{Dir: t.TempDir(), Callers: 4, Files: 100, DirEntries: 300, FileBytes: 6 << 20, NoSync: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 10 {
		t.Fatalf("%d rows:\n%s", len(rows), out.String())
	}
	for _, want := range []string{"create+close, one directory", "stat", "readdir of 300", "sequential read, 3 replicas"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("report lacks %q:\n%s", want, out.String())
		}
	}
}
