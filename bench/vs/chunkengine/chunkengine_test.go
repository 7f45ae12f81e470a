package chunkengine

import (
	"bytes"
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
