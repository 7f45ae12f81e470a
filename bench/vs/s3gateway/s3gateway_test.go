package s3gateway

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// The benchmark runs end to end at toy sizes and prints its table (its
// figures mean nothing at this size; `flyfs bench s3` gives the real ones).
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("benchmark smoke run")
	}
	t.Setenv("AWS_CA_BUNDLE", "")
	var out bytes.Buffer
	rows, err := Run(context.Background(), Config{Dir: t.TempDir(), Clients: 4, BigBytes: 1 << 20, BigObjects: 4, SmallFor: 200 * time.Millisecond,
		MPUBytes: 48 << 20, MPUPart: 5 << 20, ListEntries: 2500, NoSync: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if len(rows) != 10 || !strings.Contains(out.String(), "ListObjectsV2") || !strings.Contains(out.String(), "CopyObject of 48 MiB, chunks shared") {
		t.Fatalf("rows: %+v", rows)
	}
	for _, r := range rows {
		if r.Gateway <= 0 {
			t.Errorf("%s: no figure", r.What)
		}
	}
}
