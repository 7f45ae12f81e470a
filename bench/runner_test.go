package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRunCountEveryOpOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[int64]int{}
	res, err := Run(context.Background(), Phase{Name: "count", Workers: 4, Count: 1000, Op: func(ctx context.Context, w int, i int64) (int64, error) {
		mu.Lock()
		seen[i]++
		mu.Unlock()
		return 10, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 1000 || res.Bytes != 10000 || len(seen) != 1000 {
		t.Fatalf("ops %d bytes %d distinct %d", res.Ops, res.Bytes, len(seen))
	}
	for i, n := range seen {
		if n != 1 || i < 0 || i >= 1000 {
			t.Fatalf("op %d ran %d times", i, n)
		}
	}
	if res.OpsPerSec <= 0 || res.MiBPerSec <= 0 || res.Latency.MaxUS < res.Latency.P50US {
		t.Fatalf("rates/latency not filled: %+v", res)
	}
}

func TestRunPartitionInOrder(t *testing.T) {
	var mu sync.Mutex
	got := map[int][]int64{}
	_, err := Run(context.Background(), Phase{Name: "part", Workers: 3, Count: 10, Partition: true, Op: func(ctx context.Context, w int, i int64) (int64, error) {
		mu.Lock()
		got[w] = append(got[w], i)
		mu.Unlock()
		return 0, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]int64{0: {0, 1, 2}, 1: {3, 4, 5}, 2: {6, 7, 8, 9}}
	for w, ops := range want {
		if len(got[w]) != len(ops) {
			t.Fatalf("worker %d ran %v, want %v", w, got[w], ops)
		}
		for k := range ops {
			if got[w][k] != ops[k] {
				t.Fatalf("worker %d ran %v, want %v", w, got[w], ops)
			}
		}
	}
}

func TestRunDurationAndProgress(t *testing.T) {
	var pb bytes.Buffer
	res, err := Run(context.Background(), Phase{Name: "timed", Workers: 2, Duration: 300 * time.Millisecond, Progress: &syncWriter{w: &pb},
		Op: func(ctx context.Context, w int, i int64) (int64, error) {
			time.Sleep(time.Millisecond)
			return 4096, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops == 0 || res.Seconds < 0.3 {
		t.Fatalf("ops %d in %.3fs", res.Ops, res.Seconds)
	}
	if !strings.Contains(pb.String(), "timed") {
		t.Fatalf("no progress bar drawn: %q", pb.String())
	}
}

func TestRunStopsAtFirstError(t *testing.T) {
	boom := errors.New("boom")
	res, err := Run(context.Background(), Phase{Name: "fails", Workers: 4, Count: 1_000_000, Op: func(ctx context.Context, w int, i int64) (int64, error) {
		if i == 50 {
			return 0, boom
		}
		return 0, nil
	}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "fails: op 50") {
		t.Fatalf("err = %v", err)
	}
	if res.Ops >= 1_000_000 {
		t.Fatal("phase went on after the error")
	}
}

func TestRunBadPhases(t *testing.T) {
	op := func(ctx context.Context, w int, i int64) (int64, error) { return 0, nil }
	for _, p := range []Phase{
		{Name: "a", Workers: 0, Count: 1, Op: op},
		{Name: "b", Workers: 1, Count: -1, Op: op},
		{Name: "c", Workers: 1, Op: op},
		{Name: "d", Workers: 1, Count: 1},
	} {
		if _, err := Run(context.Background(), p); err == nil {
			t.Errorf("phase %s accepted", p.Name)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Phase{Name: "cancelled", Workers: 1, Count: 5, Op: op}); err == nil {
		t.Error("a cancelled phase must report it did not finish")
	}
}

func TestReportTableAndJSON(t *testing.T) {
	r := NewReport("fs", "/mnt/x", map[string]any{"threads": 4, "block": "1MiB"})
	r.Phases = []Result{
		{Name: "seq-write", Unit: "1MiB", Workers: 4, Ops: 100, Bytes: 100 << 20, Seconds: 2, OpsPerSec: 50, MiBPerSec: 50,
			Latency: Latency{P50US: 800, P99US: 15000, P999US: 2.5e6, MaxUS: 3e6}},
		{Name: "stat", Unit: "file", Workers: 1, Ops: 10, Seconds: 0.001, OpsPerSec: 10000, Latency: Latency{P50US: 0.5}},
	}
	r.Notes = []string{"cold reads"}
	var tb bytes.Buffer
	if err := r.WriteTable(&tb); err != nil {
		t.Fatal(err)
	}
	out := tb.String()
	for _, want := range []string{"flyfs bench fs on /mnt/x", "block=1MiB threads=4", "p999", "seq-write", "50.0", "800µs", "15.0ms", "2.50s", "note: cold reads"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// The stat row moved no bytes: its MiB/s column says so rather than 0.0.
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "stat") && !strings.Contains(line, " - ") {
			t.Errorf("stat row shows a throughput: %q", line)
		}
	}
	var jb bytes.Buffer
	if err := r.WriteJSON(&jb); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(jb.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	p, ok := back.Phase("seq-write")
	if !ok || p.Latency.P999US != 2.5e6 || p.MiBPerSec != 50 || back.Host.CPUs == 0 || back.Params["threads"] != float64(4) {
		t.Fatalf("JSON round trip lost data: %s", jb.String())
	}
	var raw map[string]any
	json.Unmarshal(jb.Bytes(), &raw)
	ph := raw["phases"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "ops_per_sec", "mib_per_sec", "latency"} {
		if _, ok := ph[k]; !ok {
			t.Errorf("JSON phase lacks %q", k)
		}
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestProgressWriter(t *testing.T) {
	var b bytes.Buffer
	if w, _ := ProgressWriter("auto", &b); w != nil {
		t.Error("auto must not draw on a non-terminal")
	}
	if w, _ := ProgressWriter("always", &b); w == nil {
		t.Error("always must draw")
	}
	if _, err := ProgressWriter("sometimes", &b); err == nil {
		t.Error("bad mode accepted")
	}
}
