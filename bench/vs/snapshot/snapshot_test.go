package snapshot

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The benchmark runs end to end on a small configuration: every row
// measured, none failed.
func TestRunSmall(t *testing.T) {
	var out bytes.Buffer
	rows, err := Run(context.Background(), Config{Dir: t.TempDir(), Files: 50, SmallBytes: 100, BigBytes: 64 << 10, Wide: 300, Clients: 4, NoSync: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows:\n%s", len(rows), out.String())
	}
	for _, r := range rows {
		if r.Error != nil || r.Took <= 0 {
			t.Fatalf("row %q: %v\n%s", r.What, r.Error, out.String())
		}
	}
	if !strings.Contains(out.String(), "snapshot of 300 sparse files") {
		t.Fatalf("table:\n%s", out.String())
	}
}
