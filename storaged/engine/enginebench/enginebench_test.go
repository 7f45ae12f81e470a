package enginebench

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRunShape(t *testing.T) {
	var out bytes.Buffer
	rep, err := Run(t.Context(), Config{Dir: t.TempDir(), Duration: 60 * time.Millisecond, ChunkSize: 128 << 10, Concurrency: 2, Rounds: 2}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	if len(rep.Results) != 3 {
		t.Fatalf("%d results, want 3", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Engine <= 0 || r.Plain <= 0 {
			t.Fatalf("%s: engine %.1f plain %.1f op/s", r.Name, r.Engine, r.Plain)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("table has %d lines, want 5", len(lines))
	}
	for i, want := range []string{"sync=false", "ratio", "128KiB chunk write", "128KiB chunk read (verified)", "4KiB random read"} {
		if !strings.Contains(lines[i], want) {
			t.Fatalf("line %d %q lacks %q", i, lines[i], want)
		}
	}
	for _, l := range lines[2:4] {
		if !strings.Contains(l, ">=0.") || !(strings.HasSuffix(l, "ok") || strings.HasSuffix(l, "MISSED")) {
			t.Fatalf("line %q lacks target/verdict", l)
		}
	}
}

// TestRunReal runs the real benchmark when FLYFS_ENGINEBENCH is set to a
// duration (e.g. 3s); FLYFS_ENGINEBENCH_DIR picks the disk (default: temp).
func TestRunReal(t *testing.T) {
	v := os.Getenv("FLYFS_ENGINEBENCH")
	if v == "" {
		t.Skip("set FLYFS_ENGINEBENCH=3s to run the benchmark")
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("FLYFS_ENGINEBENCH_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, sync := range []bool{true, false} {
		if _, err := Run(t.Context(), Config{Dir: dir, Duration: d, Sync: sync}, os.Stdout); err != nil {
			t.Fatal(err)
		}
	}
}
