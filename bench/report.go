package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Latency is a phase's latency summary in microseconds (JSON friendly).
type Latency struct {
	MeanUS float64 `json:"mean_us"`
	P50US  float64 `json:"p50_us"`
	P99US  float64 `json:"p99_us"`
	P999US float64 `json:"p999_us"`
	MaxUS  float64 `json:"max_us"`
}

// LatencyOf summarises a histogram.
func LatencyOf(h *Histogram) Latency {
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	return Latency{MeanUS: us(h.Mean()), P50US: us(h.Quantile(0.50)), P99US: us(h.Quantile(0.99)),
		P999US: us(h.Quantile(0.999)), MaxUS: us(h.Max())}
}

// Result is one measured phase.
type Result struct {
	Name    string  `json:"name"`
	Workers int     `json:"workers"`
	Ops     int64   `json:"ops"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// OpsPerSec and MiBPerSec are over the phase's wall time.
	OpsPerSec float64 `json:"ops_per_sec"`
	MiBPerSec float64 `json:"mib_per_sec"`
	Latency   Latency `json:"latency"`
	// Unit names what one op is (a 1 MiB block, a file create, a GET).
	Unit string `json:"unit,omitempty"`
}

// Host describes the machine that ran the benchmark.
type Host struct {
	Hostname string `json:"hostname"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	CPUs     int    `json:"cpus"`
	Go       string `json:"go"`
}

// Report is what `flyfs bench ... --json` prints.
type Report struct {
	Benchmark string         `json:"benchmark"`
	Target    string         `json:"target"`
	Started   time.Time      `json:"started"`
	Host      Host           `json:"host"`
	Params    map[string]any `json:"params"`
	Phases    []Result       `json:"phases"`
	Notes     []string       `json:"notes,omitempty"`
}

// NewReport starts a report for a benchmark on a target.
func NewReport(benchmark, target string, params map[string]any) *Report {
	name, _ := os.Hostname()
	return &Report{Benchmark: benchmark, Target: target, Started: time.Now().UTC().Truncate(time.Second),
		Host:   Host{Hostname: name, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), Go: runtime.Version()},
		Params: params}
}

// Phase returns the named phase's result, if the report has it.
func (r *Report) Phase(name string) (Result, bool) {
	for _, p := range r.Phases {
		if p.Name == name {
			return p, true
		}
	}
	return Result{}, false
}

// WriteJSON prints the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable prints the report as an aligned table, one phase per row.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "flyfs bench %s on %s (%s, %d CPUs)\n", r.Benchmark, r.Target, r.Host.Hostname, r.Host.CPUs)
	if len(r.Params) > 0 {
		fmt.Fprintf(w, "  %s\n", formatParams(r.Params))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tunit\tworkers\tops\ttime\tMiB/s\tops/s\tp50\tp99\tp999\tmax\t")
	for _, p := range r.Phases {
		mib := "-"
		if p.Bytes > 0 {
			mib = fmt.Sprintf("%.1f", p.MiBPerSec)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p.Name, p.Unit, p.Workers, p.Ops,
			fmtSeconds(p.Seconds), mib, fmtRate(p.OpsPerSec), fmtUS(p.Latency.P50US), fmtUS(p.Latency.P99US),
			fmtUS(p.Latency.P999US), fmtUS(p.Latency.MaxUS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

func formatParams(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, m[k])
	}
	return strings.Join(parts, " ")
}

func fmtSeconds(s float64) string { return time.Duration(s * 1e9).Round(time.Millisecond).String() }

func fmtRate(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// fmtUS prints a latency with three significant digits and a unit.
func fmtUS(us float64) string {
	switch {
	case us <= 0:
		return "0"
	case us < 1000:
		return trim3(us) + "µs"
	case us < 1e6:
		return trim3(us/1e3) + "ms"
	default:
		return trim3(us/1e6) + "s"
	}
}

func trim3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
