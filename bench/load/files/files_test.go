package files

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/bench"
)

func tiny(t *testing.T) Config {
	c := Defaults()
	c.Dir = t.TempDir()
	c.Threads, c.BigSize, c.BlockSize, c.SmallCount, c.SmallSize = 3, 256<<10, 64<<10, 30, 5000
	c.RandDuration = 100 * time.Millisecond
	return c
}

var allPhases = []string{"seq-write", "seq-read", "rand-read", "small-write", "small-stat", "small-read", "small-delete"}

func TestEveryPhaseEveryMode(t *testing.T) {
	for _, mode := range []string{CacheFadvise, CacheDirect, CacheNone} {
		t.Run(mode, func(t *testing.T) {
			c := tiny(t)
			c.Cache = mode
			rep, err := Run(context.Background(), c)
			if err != nil {
				if mode == CacheDirect && strings.Contains(err.Error(), "O_DIRECT") {
					t.Skipf("the temp dir's file system refuses O_DIRECT: %v", err)
				}
				t.Fatal(err)
			}
			for _, name := range allPhases {
				p, ok := rep.Phase(name)
				if !ok {
					t.Fatalf("no %s phase in %+v", name, rep.Phases)
				}
				if p.Ops == 0 || p.Latency.P50US <= 0 || p.Latency.P999US < p.Latency.P50US {
					t.Errorf("%s: %+v", name, p)
				}
			}
			for name, ops := range map[string]int64{"seq-write": 12, "seq-read": 12, "small-write": 30, "small-read": 30, "small-stat": 30} {
				if p, _ := rep.Phase(name); p.Ops != ops {
					t.Errorf("%s ran %d ops, want %d", name, p.Ops, ops)
				}
			}
			if p, _ := rep.Phase("seq-read"); p.Bytes != 3*256<<10 {
				t.Errorf("seq-read moved %d bytes", p.Bytes)
			}
			if ents, _ := os.ReadDir(c.Dir); len(ents) != 0 {
				t.Errorf("left %d entries behind", len(ents))
			}
		})
	}
}

func TestShortLastBlockAndSkips(t *testing.T) {
	c := tiny(t)
	c.BigSize = 100_000 // not a multiple of the block size
	c.SmallCount = 0
	c.RandDuration = 0
	c.Keep = true
	rep, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases) != 2 {
		t.Fatalf("phases %+v, want only seq-write and seq-read", rep.Phases)
	}
	if p, _ := rep.Phase("seq-read"); p.Bytes != 3*100_000 {
		t.Errorf("seq-read moved %d bytes", p.Bytes)
	}
	if ents, _ := os.ReadDir(c.Dir); len(ents) != 1 {
		t.Errorf("--keep: want the run's directory kept, got %d entries", len(ents))
	}
}

// The read phases check what they read: a file cut short or a block in the
// wrong place fails the run instead of being counted as throughput.
func TestReadsCatchBadData(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(path string) error
		want  string
	}{
		{"truncated", func(p string) error { return os.Truncate(p, 100_000) }, "short read"},
		{"misplaced", func(p string) error {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			blk := make([]byte, 16)
			if _, err := f.ReadAt(blk, 0); err != nil {
				return err
			}
			_, err = f.WriteAt(blk, 64<<10) // block 0's stamp over block 1's
			return err
		}, "data mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tiny(t)
			c.Cache = CacheNone
			root := t.TempDir()
			r := &run{cfg: c, ctx: context.Background(), root: root, bpf: 4}
			r.rep = newTestReport()
			if err := r.phase(r.seqWrite()); err != nil {
				t.Fatal(err)
			}
			if err := tc.spoil(r.bigName(1)); err != nil {
				t.Fatal(err)
			}
			err := r.phase(r.seqRead())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestBadConfig(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"no dir":        func(c *Config) { c.Dir = "" },
		"missing dir":   func(c *Config) { c.Dir += "/nope" },
		"zero threads":  func(c *Config) { c.Threads = 0 },
		"bad cache":     func(c *Config) { c.Cache = "cold" },
		"direct odd":    func(c *Config) { c.Cache, c.BlockSize = CacheDirect, 1000 },
		"tiny block":    func(c *Config) { c.BlockSize = 8 },
		"negative size": func(c *Config) { c.SmallSize = -1 },
		"rand too big":  func(c *Config) { c.RandSize = c.BigSize + 1 },
	} {
		c := tiny(t)
		mod(&c)
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func newTestReport() *bench.Report { return bench.NewReport("fs", "test", nil) }
