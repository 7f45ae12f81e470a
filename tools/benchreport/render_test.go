package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/bench"
)

// phase makes a result with a rate; MiB/s equals ops/s for 1 MiB ops.
func phase(name, unit string, mibps, opsps float64) bench.Result {
	return bench.Result{Name: name, Unit: unit, Workers: 4, Ops: 100, Bytes: 1 << 20, Seconds: 1, MiBPerSec: mibps, OpsPerSec: opsps,
		Latency: bench.Latency{P50US: 250, P99US: 2500}}
}

func report(bm string, params map[string]any, notes []string, phases ...bench.Result) *bench.Report {
	return &bench.Report{Benchmark: bm, Target: "/x", Params: params, Phases: phases, Notes: notes}
}

// testIndex is a complete run's index with made-up figures whose ratios
// are easy to check.
func testIndex() *Index {
	ix := &Index{Started: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), Finished: time.Date(2026, 1, 2, 3, 11, 0, 0, time.UTC),
		Commit: "0123456789abcdef", Reproduce: "go run ./tools/benchreport --flyfs bin/flyfs --s3-objects 64",
		Machine: Machine{CPUModel: "AMD EPYC", CPUs: 2, Hypervisor: true, MemTotal: "23.5 GiB", Kernel: "6.1.0", OS: "Debian",
			DataFS: "ext4", DataDevice: "/dev/vda", DataMount: "/", Go: "go version go1.26 linux/amd64", Flyfs: "flyfs dev"},
		Settings: Settings{Threads: 4, BigSize: "256MiB", SmallCount: 2000, SmallSize: "128KiB", RandDuration: "4s", ReadTotal: "1GiB",
			S3Objects: 64, S3Size: "4MiB", Cache: "drop", Disks: 1, Replicas: 1, Server: []string{"server", "--data", "$WORK/data"}}}
	load := 1.0
	add := func(kind, target string, x int, r *bench.Report) {
		ix.Runs = append(ix.Runs, Run{Kind: kind, Target: target, X: x, File: fmt.Sprintf("%s-%s-%d.json", kind, target, x),
			Command: fmt.Sprintf("flyfs bench %s %s-%d --json", kind, target, x), LoadBefore: load, LoadAfter: load + 0.5, Report: r})
		load += 0.5
	}
	note := []string{"reads are cold"}
	scale := map[string]float64{TargetFlyfs: 1, TargetLoopback: 2, TargetLocal: 4, TargetPassthrough: 8}
	for _, t := range []string{TargetFlyfs, TargetLoopback, TargetLocal, TargetPassthrough} {
		k := scale[t]
		add(KindFS, t, 4, report("fs", nil, note,
			phase("seq-write", "1MiB write", 100*k, 100*k), phase("seq-read", "1MiB read", 500*k, 500*k),
			phase("rand-read", "4KiB read", k, 1000*k), phase("small-stat", "stat", 0, 3000*k)))
	}
	for _, th := range []int{1, 16} {
		for _, t := range []string{TargetFlyfs, TargetLoopback, TargetLocal} {
			k := scale[t] * float64(th)
			add(KindRead, t, th, report("fs", map[string]any{"big_size": fmt.Sprintf("%dMiB", 1024/th)}, note,
				phase("seq-write", "1MiB write", 10*k, 10*k), phase("seq-read", "1MiB read", 20*k, 20*k), phase("rand-read", "4KiB read", k, 250*k)))
		}
	}
	for _, c := range []int{1, 4} {
		add(KindS3, TargetGateway, c, report("s3", nil, []string{"every GET checks the object"},
			phase("put", "4MiB object", 30*float64(c), 7.5*float64(c)), phase("get", "4MiB object", 100*float64(c), 25*float64(c))))
	}
	return ix
}

func TestRenderMarkdown(t *testing.T) {
	ix := testIndex()
	cs := charts(ix)
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	if strings.Join(names, " ") != "s3-get.svg fuse-seq-read.svg fuse-rand-read.svg" {
		t.Fatalf("charts %q", names)
	}
	// The FUSE read chart has flyfs, loopback and local in that order,
	// each at x = 1 and 16 with the seq-read figure.
	seq := cs[1].Chart
	if len(seq.Series) != 3 || seq.Series[0].Name != targetStyle[TargetFlyfs].Label || !seq.Series[1].Dashed ||
		fmt.Sprint(seq.Series[1].X, seq.Series[1].Y) != "[1 16] [40 640]" {
		t.Errorf("seq-read chart series: %+v", seq.Series)
	}
	md, err := renderMarkdown(ix, cs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# flyfs benchmarks",
		"**The machine is shared and noisy.**",
		"went from 1.0 to 7.0", // the load range over the runs (12 runs, +0.5 each)
		"| CPU | AMD EPYC (virtual machine) |",
		"| disk of the data dir | ext4 on /dev/vda, mounted at / |",
		"go run ./tools/benchreport --flyfs bin/flyfs --s3-objects 64",
		"flyfs bench s3 gateway-4 --json",
		// fs table: flyfs vs loopback (2x) vs local (4x).
		"| seq-read | 1MiB read | MiB/s | **500** | 1 000 | 2 000 | 0.50× | 0.25× | 4 000 |",
		"| small-stat | stat | ops/s | **3 000** | 6 000 | 12 000 | 0.50× | 0.25× | 24 000 |",
		"¹ Not a ceiling for flyfs",
		"4 KiB random reads ran at 8 000/s on the loopback with passthrough against 2 000/s through its daemon.",
		"| seq-write | 250 µs / 2.5 ms | 250 µs / 2.5 ms | 250 µs / 2.5 ms |",
		// read scaling rows: seq MiB/s and random reads/s per target.
		"| 1 | 1024MiB | **20.0** | 40.0 | 80.0 | 0.50× | **250** | 500 | 1 000 | 0.50× | 2.5 ms |",
		"| 16 | 64MiB | **320** | 640 | 1 280 | 0.50× | **4 000** | 8 000 | 16 000 | 0.50× | 2.5 ms |",
		// S3 rows.
		"| 4 | **400** | 100 | 250 µs | 2.5 ms | 120 | 2.5 ms |",
		// Plots embedded, relative to the page.
		"![S3 GET MiB/s vs concurrency](benchmarks/s3-get.svg)",
		"(benchmarks/fuse-seq-read.svg)",
		"(benchmarks/fuse-rand-read.svg)",
		// Summary lines.
		"FUSE sequential read, 16 threads: flyfs **320 MiB/s**, 50% of the loopback ceiling (640 MiB/s).",
		"S3 GET: **100 MiB/s** at concurrency 1, at best **400 MiB/s** (concurrency 4).",
		// Reports' notes, once each.
		"From the reports: reads are cold.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(md, "From the reports: reads are cold."); n != 1 {
		t.Errorf("a note repeated %d times", n)
	}
	if strings.Contains(md, "%!") {
		t.Errorf("a formatting error in the page:\n%s", md)
	}
}

func TestRenderPartialAndBad(t *testing.T) {
	// Only S3 runs: no file-system sections, no FUSE charts.
	ix := testIndex()
	var s3 []Run
	for _, r := range ix.Runs {
		if r.Kind == KindS3 {
			s3 = append(s3, r)
		}
	}
	ix.Runs = s3
	cs := charts(ix)
	if len(cs) != 1 || cs[0].Name != "s3-get.svg" {
		t.Fatalf("charts of an S3-only run: %+v", cs)
	}
	md, err := renderMarkdown(ix, cs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md, "## FUSE reads") || strings.Contains(md, "## File system") || !strings.Contains(md, "## S3 GET") {
		t.Errorf("sections of an S3-only page wrong:\n%s", md)
	}

	if _, err := renderMarkdown(&Index{}, nil); err == nil {
		t.Error("an empty index rendered")
	}
	ix = testIndex()
	ix.Runs[2].Report = nil
	if _, err := renderMarkdown(ix, nil); err == nil {
		t.Error("a run without its report rendered")
	}
}

// TestRenderFromDisk writes an index and its reports as a run would, then
// redraws them the way --render does.
func TestRenderFromDisk(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "benchmarks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ix := testIndex()
	for _, r := range ix.Runs {
		if err := writeJSON(filepath.Join(dir, r.File), r.Report); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeJSON(filepath.Join(dir, indexName), ix); err != nil {
		t.Fatal(err)
	}
	if err := renderOnly(out); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := renderMarkdown(testIndex(), charts(testIndex()))
	if err != nil {
		t.Fatal(err)
	}
	if string(md) != want {
		t.Error("the page redrawn from disk differs from the one rendered in memory")
	}
	for _, f := range []string{"s3-get.svg", "fuse-seq-read.svg", "fuse-rand-read.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		parseSVG(t, b)
	}
	// A report that went missing is an error, not a page with holes.
	os.Remove(filepath.Join(dir, ix.Runs[0].File))
	if err := renderOnly(out); err == nil {
		t.Error("rendered with a report missing")
	}
}

func TestIntList(t *testing.T) {
	var l intList
	if err := l.Set("1, 2,16"); err != nil || l.String() != "1,2,16" {
		t.Errorf("Set: %v %v", l, err)
	}
	for _, bad := range []string{"", "0", "1,,2", "x", "-4"} {
		if err := l.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}

func TestMountOf(t *testing.T) {
	fstype, src, mp := mountOf(t.TempDir())
	if fstype == "" || src == "" || !strings.HasPrefix(os.TempDir(), mp) {
		t.Errorf("mountOf(temp dir) = %q %q %q", fstype, src, mp)
	}
	if got := unescapeMount(`/mnt/a\040b`); got != "/mnt/a b" {
		t.Errorf("unescapeMount: %q", got)
	}
}
