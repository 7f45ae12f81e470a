// Package kvtxn measures the Pebble engine's transactions against raw Pebble
// batch commits with the same sync setting, in one run, for `flyfs bench kv`.
package kvtxn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/pebblekv"
)

// Config shapes a run.
type Config struct {
	Dir      string        // scratch directory; a temporary one when empty
	Duration time.Duration // per measurement; default 3 s
	Writers  int           // concurrent writers; default 16
	NoSync   bool          // both sides skip the WAL fsync
}

// Result is one measurement.
type Result struct {
	Name      string
	Writers   int
	Ops       int64
	Conflicts int64 // re-runs of the transaction body
	Elapsed   time.Duration
}

// PerSec is the measured rate.
func (r Result) PerSec() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

// Report is a run's results.
type Report struct {
	Raw1, Txn1, RawN, TxnN, TxnHot Result
}

// Ratio is uncontended transactions per raw batch commit at Writers writers:
// the target is at least 0.5.
func (r Report) Ratio() float64 { return r.TxnN.PerSec() / r.RawN.PerSec() }

// Run measures and prints a table to w.
func Run(ctx context.Context, cfg Config, w io.Writer) (Report, error) {
	if cfg.Duration <= 0 {
		cfg.Duration = 3 * time.Second
	}
	if cfg.Writers <= 0 {
		cfg.Writers = 16
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "flyfs-bench-kv-")
		if err != nil {
			return Report{}, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	var rep Report
	var err error
	if rep.Raw1, err = rawCommits(ctx, filepath.Join(dir, "raw1"), cfg, 1); err != nil {
		return rep, err
	}
	if rep.RawN, err = rawCommits(ctx, filepath.Join(dir, "rawN"), cfg, cfg.Writers); err != nil {
		return rep, err
	}
	db, err := pebblekv.Open(filepath.Join(dir, "txn"), pebblekv.Options{NoSync: cfg.NoSync})
	if err != nil {
		return rep, err
	}
	defer db.Close()
	rep.Txn1 = txnCommits(ctx, db, cfg, 1, false)
	rep.TxnN = txnCommits(ctx, db, cfg, cfg.Writers, false)
	rep.TxnHot = txnCommits(ctx, db, cfg, cfg.Writers, true)
	for _, r := range []Result{rep.TxnN, rep.TxnHot} {
		if r.Ops == 0 {
			return rep, errors.New("kvtxn: no transaction committed")
		}
	}

	sync := "WAL fsync on every commit"
	if cfg.NoSync {
		sync = "no WAL fsync"
	}
	fmt.Fprintf(w, "flyfs bench kv: pebble engine vs raw pebble, %s, %v per row\n", sync, cfg.Duration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\twriters\tcommits/s\tretries/s\t")
	for _, r := range []Result{rep.Raw1, rep.Txn1, rep.RawN, rep.TxnN, rep.TxnHot} {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t\n", r.Name, r.Writers, r.PerSec(), float64(r.Conflicts)/r.Elapsed.Seconds())
	}
	tw.Flush()
	fmt.Fprintf(w, "uncontended txn / raw batch commits at %d writers: %.2f (target >= 0.50)\n", cfg.Writers, rep.Ratio())
	fmt.Fprintf(w, "uncontended txn / raw batch commits at 1 writer:  %.2f\n", rep.Txn1.PerSec()/rep.Raw1.PerSec())
	return rep, nil
}

func rawCommits(ctx context.Context, dir string, cfg Config, writers int) (Result, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebblekv.QuietLogger{}})
	if err != nil {
		return Result{}, err
	}
	defer db.Close()
	opts := pebble.Sync
	if cfg.NoSync {
		opts = pebble.NoSync
	}
	ops, el, err := bench.Drive(ctx, cfg.Duration, writers, func(ctx context.Context, g int, i int64) error {
		b := db.NewBatch()
		defer b.Close()
		b.Set([]byte(fmt.Sprintf("w%03d/%d", g, i%1024)), []byte("value-0123456789"), nil)
		return b.Commit(opts)
	})
	return Result{Name: "raw pebble batch (1 set)", Writers: writers, Ops: ops, Elapsed: el}, err
}

func txnCommits(ctx context.Context, db *kv.DB, cfg Config, writers int, hot bool) Result {
	var retries atomic.Int64
	ops, el, _ := bench.Drive(ctx, cfg.Duration, writers, func(ctx context.Context, g int, i int64) error {
		key := []byte(fmt.Sprintf("w%03d", g))
		if hot {
			key = []byte("hot")
		}
		attempts := 0
		err := db.Run(context.Background(), func(tx kv.Txn) error {
			attempts++
			v, _, err := tx.Get(ctx, key)
			if err != nil {
				return err
			}
			tx.Set(key, append(v[:0:0], []byte("value-0123456789")...))
			return nil
		})
		retries.Add(int64(attempts - 1))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	})
	name := "txn 1 read + 1 write, own key"
	if hot {
		name = "txn 1 read + 1 write, one hot key"
	}
	return Result{Name: name, Writers: writers, Ops: ops, Conflicts: retries.Load(), Elapsed: el}
}
