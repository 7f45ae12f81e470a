package chain_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/bench/vs/chain"
)

// TestRunPrintsTable keeps the benchmark working; it checks the report's
// shape, never its speed.
func TestRunPrintsTable(t *testing.T) {
	var out bytes.Buffer
	rep, err := chain.Run(context.Background(), chain.Config{Dir: t.TempDir(), Duration: 150 * time.Millisecond, Concurrency: 2, NoSync: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.EngineWriteMBps <= 0 || rep.ChainWriteMBps <= 0 || rep.ChainReadMBps <= 0 || rep.Batched4KiB <= 0 {
		t.Fatalf("a measurement did nothing: %+v", rep)
	}
	for _, want := range []string{"chain of 3 writes", "spread", "32 per RPC", ">= 0.28"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("report lacks %q:\n%s", want, out.String())
		}
	}
}
