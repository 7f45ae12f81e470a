package objects

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/flyfs/flyfs/bench"
)

// PhaseRatio is one phase of a run beside the same phase of a run of the
// same load against another server (the baseline).
type PhaseRatio struct {
	Phase    string  `json:"phase"`
	Unit     string  `json:"unit"` // what This and Baseline count: MiB/s, or ops/s for phases that move no data
	This     float64 `json:"this"`
	Baseline float64 `json:"baseline"`
	Ratio    float64 `json:"ratio"` // This / Baseline (0 when the baseline is 0)
}

// Compare pairs the phases the two reports share, in this report's order:
// throughput where the phase moves data, operations per second otherwise.
func Compare(this, baseline *bench.Report) []PhaseRatio {
	var out []PhaseRatio
	for _, p := range this.Phases {
		b, ok := baseline.Phase(p.Name)
		if !ok {
			continue
		}
		r := PhaseRatio{Phase: p.Name, Unit: "MiB/s", This: p.MiBPerSec, Baseline: b.MiBPerSec}
		if p.Bytes == 0 || b.Bytes == 0 {
			r.Unit, r.This, r.Baseline = "ops/s", p.OpsPerSec, b.OpsPerSec
		}
		if r.Baseline > 0 {
			r.Ratio = r.This / r.Baseline
		}
		out = append(out, r)
	}
	return out
}

// WriteComparison prints Compare's rows as a table.
func WriteComparison(w io.Writer, this, baseline *bench.Report) error {
	fmt.Fprintf(w, "%s beside %s (the same load, back to back)\n", this.Target, baseline.Target)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tunit\tthis\tbaseline\tratio\t")
	for _, r := range Compare(this, baseline) {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.2fx\t\n", r.Phase, r.Unit, r.This, r.Baseline, r.Ratio)
	}
	return tw.Flush()
}
