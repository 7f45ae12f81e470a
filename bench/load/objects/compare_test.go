package objects

import (
	"bytes"
	"strings"
	"testing"

	"github.com/flyfs/flyfs/bench"
)

func TestCompare(t *testing.T) {
	this := &bench.Report{Target: "a", Phases: []bench.Result{
		{Name: "put", Bytes: 100, MiBPerSec: 300, OpsPerSec: 5},
		{Name: "get", Bytes: 100, MiBPerSec: 1500, OpsPerSec: 20},
		{Name: "reget", Bytes: 100, MiBPerSec: 10, OpsPerSec: 1},
		{Name: "delete", OpsPerSec: 2000},
	}}
	base := &bench.Report{Target: "b", Phases: []bench.Result{
		{Name: "delete", OpsPerSec: 1000},
		{Name: "get", Bytes: 100, MiBPerSec: 2000, OpsPerSec: 30},
		{Name: "put", Bytes: 100, MiBPerSec: 0},
	}}
	got := Compare(this, base)
	want := []PhaseRatio{
		{Phase: "put", Unit: "MiB/s", This: 300, Baseline: 0, Ratio: 0},
		{Phase: "get", Unit: "MiB/s", This: 1500, Baseline: 2000, Ratio: 0.75},
		{Phase: "delete", Unit: "ops/s", This: 2000, Baseline: 1000, Ratio: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	var out bytes.Buffer
	if err := WriteComparison(&out, this, base); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "0.75x") || !strings.Contains(s, "2.00x") || strings.Contains(s, "reget") {
		t.Fatalf("table:\n%s", s)
	}
}
