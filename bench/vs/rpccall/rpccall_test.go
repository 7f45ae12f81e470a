package rpccall_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/bench/vs/rpccall"
)

// TestRun keeps Run from rotting: tiny durations and sizes, no timing
// assertions. Set FLYFS_RPCBENCH_FULL=1 to run the default measurement and
// see its table (go test -run TestRun -v ./bench/vs/rpccall).
func TestRun(t *testing.T) {
	cfg := rpccall.Config{Duration: 50 * time.Millisecond, SmallCallers: 8, PayloadCallers: 2, PayloadSizes: []int{64 << 10, 1 << 20}}
	if os.Getenv("FLYFS_RPCBENCH_FULL") != "" {
		cfg = rpccall.Config{}
	}
	var out bytes.Buffer
	rep, err := rpccall.Run(context.Background(), cfg, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if rep.Small.Calls == 0 || rep.Small.P99 < rep.Small.P50 {
		t.Errorf("small-call result is implausible: %+v", rep.Small)
	}
	wantSizes := len(cfg.PayloadSizes)
	if wantSizes == 0 {
		wantSizes = 2
	}
	if len(rep.Payload) != wantSizes {
		t.Fatalf("got %d payload results, want %d", len(rep.Payload), wantSizes)
	}
	for _, p := range rep.Payload {
		if p.RPCCalls == 0 || p.RawRounds == 0 || p.Ratio <= 0 {
			t.Errorf("payload result is implausible: %+v", p)
		}
	}
	for _, want := range []string{"rpc small calls", "calls/s", "p99", "raw tcp", "ratio"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
}

func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	if _, err := rpccall.Run(ctx, rpccall.Config{Duration: time.Second}, &out); err == nil {
		t.Fatal("Run with a canceled context succeeded")
	}
}
