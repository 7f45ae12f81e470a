package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/flyfs/flyfs/bench"
)

// Kinds of run.
const (
	KindFS   = "fs"        // the whole `bench fs` on each target, same settings
	KindRead = "fuse-read" // `bench fs` big-file reads at a thread count
	KindS3   = "s3"        // `bench s3` at a concurrency
)

// Targets.
const (
	TargetFlyfs    = "flyfs"    // the flyfs FUSE mount of `flyfs server --mount`
	TargetLocal    = "local"    // a directory on the disk under the server's data
	TargetLoopback = "loopback" // go-fuse's loopback FUSE file system over a local directory
	TargetGateway  = "gateway"  // the flyfs S3 gateway
	// TargetPassthrough is the loopback with FUSE passthrough on: the data
	// bypasses the daemon. Shown beside the ceiling, never as one.
	TargetPassthrough = "passthrough"
)

// Run is one `flyfs bench ... --json` invocation and where its output is.
type Run struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
	// X is the thread count or the S3 concurrency.
	X int `json:"x"`
	// File is the report's JSON, relative to the benchmarks directory.
	File string `json:"file"`
	// Command is what ran, with paths and keys as shell variables.
	Command string `json:"command"`
	// Load is /proc/loadavg's 1-minute figure before and after: the machine
	// is shared, so this says how busy it was around the run.
	LoadBefore float64 `json:"load_before"`
	LoadAfter  float64 `json:"load_after"`

	Report *bench.Report `json:"-"`
}

// Index is what one benchreport run produced; the page is rendered from it
// and the reports it names, so `--render` can redo the page without
// running anything.
type Index struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Commit   string    `json:"commit"`
	// Reproduce is the benchreport command line that made this.
	Reproduce string   `json:"reproduce"`
	Machine   Machine  `json:"machine"`
	Settings  Settings `json:"settings"`
	Runs      []Run    `json:"runs"`
}

// Settings are the sizes and counts of the run (the flags).
type Settings struct {
	Threads      int      `json:"threads"`
	BigSize      string   `json:"big_size"`
	SmallCount   int      `json:"small_count"`
	SmallSize    string   `json:"small_size"`
	RandDuration string   `json:"rand_duration"`
	ReadTotal    string   `json:"read_total"`
	ThreadCounts []int    `json:"thread_counts"`
	S3Conc       []int    `json:"s3_concurrency"`
	S3Objects    int      `json:"s3_objects"`
	S3Size       string   `json:"s3_size"`
	Cache        string   `json:"cache"`
	Disks        int      `json:"disks"`
	Replicas     int      `json:"replicas"`
	Server       []string `json:"server_args"`
}

const indexName = "index.json"

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// loadIndex reads dir/index.json and every report it names.
func loadIndex(dir string) (*Index, error) {
	b, err := os.ReadFile(filepath.Join(dir, indexName))
	if err != nil {
		return nil, err
	}
	var ix Index
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, fmt.Errorf("%s: %w", indexName, err)
	}
	for i := range ix.Runs {
		r := &ix.Runs[i]
		rb, err := os.ReadFile(filepath.Join(dir, r.File))
		if err != nil {
			return nil, err
		}
		r.Report = new(bench.Report)
		if err := json.Unmarshal(rb, r.Report); err != nil {
			return nil, fmt.Errorf("%s: %w", r.File, err)
		}
	}
	return &ix, nil
}

// find returns the run of a kind and target at x.
func (ix *Index) find(kind, target string, x int) *Run {
	for i := range ix.Runs {
		r := &ix.Runs[i]
		if r.Kind == kind && r.Target == target && (x == 0 || r.X == x) {
			return r
		}
	}
	return nil
}

// xs lists the x values of a kind, in run order, without repeats.
func (ix *Index) xs(kind string) []int {
	var out []int
	seen := map[int]bool{}
	for _, r := range ix.Runs {
		if r.Kind == kind && !seen[r.X] {
			seen[r.X] = true
			out = append(out, r.X)
		}
	}
	return out
}

// loadRange is the lowest and highest 1-minute load seen around the runs.
func (ix *Index) loadRange() (lo, hi float64) {
	first := true
	for _, r := range ix.Runs {
		for _, v := range []float64{r.LoadBefore, r.LoadAfter} {
			if first {
				lo, hi, first = v, v, false
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return lo, hi
}
