package kvtxn_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/bench/vs/kvtxn"
)

// TestRunPrintsTable keeps the benchmark from rotting; it asserts the report's
// shape, never its speed.
func TestRunPrintsTable(t *testing.T) {
	var out bytes.Buffer
	rep, err := kvtxn.Run(context.Background(), kvtxn.Config{Dir: t.TempDir(), Duration: 100 * time.Millisecond, Writers: 4}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.RawN.Ops == 0 || rep.TxnN.Ops == 0 || rep.TxnHot.Ops == 0 {
		t.Fatalf("a measurement did nothing: %+v", rep)
	}
	for _, want := range []string{"raw pebble batch", "own key", "hot key", "target >= 0.50"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("report lacks %q:\n%s", want, out.String())
		}
	}
}
