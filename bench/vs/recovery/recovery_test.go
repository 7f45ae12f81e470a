package recovery_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/bench/vs/recovery"
)

// TestRunPrintsTable rebuilds a small target; it checks the report, never speed.
func TestRunPrintsTable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	var out bytes.Buffer
	rep, err := recovery.Run(context.Background(), recovery.Config{Bytes: 32 << 20, Dir: t.TempDir(), NoSync: true, ReadWindow: 300 * time.Millisecond}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.RecoveryMBps <= 0 || rep.WriteMBps <= 0 || rep.ReadBeforeMBps <= 0 {
		t.Fatalf("a measurement did nothing: %+v\n%s", rep, out.String())
	}
	if !strings.Contains(out.String(), "rebuild MB/s") || !strings.Contains(out.String(), "during recovery") {
		t.Fatalf("report:\n%s", out.String())
	}
}
