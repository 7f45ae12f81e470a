package fusefs

import (
	"bytes"
	"errors"
	"log"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/flyfs/flyfs/core/observe"
)

// gathered sums family name's series whose labels include want (a
// counter's value, a histogram's sample count).
func gathered(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue next
				}
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				total += m.Counter.GetValue()
			case dto.MetricType_HISTOGRAM:
				total += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return total
}

// TestMountMetrics: the FUSE operations served through a mount show in its
// registry: latency per op, errors by errno, bytes read and written.
func TestMountMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, m := mountCluster(t, Options{Registerer: reg, AttrTimeout: -1, EntryTimeout: -1})
	d := m.Dir()
	data := bytes.Repeat([]byte("metrics "), 128<<10) // 1 MiB
	p := filepath.Join(d, "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	dropPages(t, p) // so the read goes to the mount
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	if err := os.Mkdir(filepath.Join(d, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "dir", "g"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Rmdir(filepath.Join(d, "dir")); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("rmdir of a directory with a file: %v, want ENOTEMPTY", err)
	}
	if _, err := os.Stat(filepath.Join(d, "missing")); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("stat of a missing file: %v", err)
	}

	for _, c := range []struct {
		name    string
		labels  map[string]string
		atLeast float64
	}{
		{"flyfs_mount_op_duration_seconds", map[string]string{"op": "Create"}, 1},
		{"flyfs_mount_op_duration_seconds", map[string]string{"op": "Write"}, 1},
		{"flyfs_mount_op_duration_seconds", map[string]string{"op": "Read"}, 1},
		{"flyfs_mount_op_duration_seconds", map[string]string{"op": "Mkdir"}, 1},
		{"flyfs_mount_op_duration_seconds", map[string]string{"op": "Rmdir"}, 1},
		{"flyfs_mount_op_duration_seconds", map[string]string{"op": "Lookup"}, 1},
		{"flyfs_mount_op_errors_total", map[string]string{"op": "Rmdir", "errno": "ENOTEMPTY"}, 1},
		{"flyfs_mount_written_bytes_total", nil, float64(len(data))},
		{"flyfs_mount_read_bytes_total", nil, float64(len(data))},
	} {
		if got := gathered(t, reg, c.name, c.labels); got < c.atLeast {
			t.Errorf("%s%v = %v, want at least %v", c.name, c.labels, got, c.atLeast)
		}
	}
	// A missing name is a negative entry (Lookup answers OK), not an error.
	if got := gathered(t, reg, "flyfs_mount_op_errors_total", map[string]string{"op": "Lookup"}); got != 0 {
		t.Errorf("lookup errors %v, want none", got)
	}
}

// TestMountMetricsAllocateNothing: recording an operation, failed ones
// included once their errno has been seen, allocates nothing.
func TestMountMetricsAllocateNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	m.done(opLookup, time.Now(), fuse.ENOENT)
	if n := testing.AllocsPerRun(1000, func() {
		m.done(opRead, time.Now(), fuse.OK)
		m.done(opLookup, time.Now(), fuse.ENOENT)
		m.read.Add(4096)
	}); n != 0 {
		t.Errorf("%v allocations per operation recorded", n)
	}
	if got := gathered(t, reg, "flyfs_mount_op_errors_total", map[string]string{"op": "Lookup", "errno": "ENOENT"}); got != 1002 {
		t.Errorf("Lookup ENOENT counted %v times, want 1002", got)
	}
}

// go-fuse's own lines (through its log.Logger) come at debug: gone at info,
// there at debug, and at info with Debug (every request logged).
func TestGoFuseLinesAtDebug(t *testing.T) {
	for _, c := range []struct {
		level string
		debug bool
		want  string // "" : not logged
	}{{"info", false, ""}, {"debug", false, "level=DEBUG"}, {"info", true, "level=INFO"}} {
		var b bytes.Buffer
		l, _ := observe.NewLogger(&b, c.level, "text")
		lib := log.New(goFuseLog(Options{Log: l, Debug: c.debug}), "", 0)
		lib.Println("writer: Write/Writev failed")
		got := b.String()
		if c.want == "" && got != "" || c.want != "" && (!strings.Contains(got, c.want) || !strings.Contains(got, "Write/Writev failed")) {
			t.Errorf("level %s, debug %v: logged %q, want %q", c.level, c.debug, got, c.want)
		}
	}
}
