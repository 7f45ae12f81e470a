package kvmetrics

import (
	"context"
	"testing"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
	"github.com/prometheus/client_golang/prometheus"
)

// Conflicts injected into commits show up as conflicts and retries; every
// Run counts once, whatever its attempts.
func TestHooksCountTransactions(t *testing.T) {
	reg := prometheus.NewRegistry()
	db := memkv.Open(kv.Options{Faults: &kv.Faults{CommitRate: 0.5, Seed: 7}, Hooks: Hooks(reg, "metad")})
	defer db.Close()
	ctx := context.Background()
	const runs = 20
	for i := 0; i < runs; i++ {
		if err := db.Run(ctx, func(tx kv.Txn) error { tx.Set([]byte("k"), []byte{byte(i)}); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.RunRead(ctx, func(tx kv.ReadTxn) error { _, _, err := tx.Get(ctx, []byte("k")); return err }); err != nil {
		t.Fatal(err)
	}
	got := totals(t, reg)
	if got["flyfs_metad_kv_txns_total"] != runs+1 {
		t.Errorf("txns %v, want %d", got["flyfs_metad_kv_txns_total"], runs+1)
	}
	if got["flyfs_metad_kv_retries_total"] == 0 || got["flyfs_metad_kv_commit_duration_seconds"] < runs {
		t.Errorf("retries %v, commits %v", got["flyfs_metad_kv_retries_total"], got["flyfs_metad_kv_commit_duration_seconds"])
	}
	if fc := db.FaultCounts(); got["flyfs_metad_kv_conflicts_total"] != float64(fc.Conflicts) {
		t.Errorf("conflicts %v, injected %d", got["flyfs_metad_kv_conflicts_total"], fc.Conflicts)
	}
	// A view with other hooks counts apart.
	other := prometheus.NewRegistry()
	v := db.WithHooks(Hooks(other, "mgmtd"))
	if err := v.RunRead(ctx, func(kv.ReadTxn) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n := totals(t, other)["flyfs_mgmtd_kv_txns_total"]; n != 1 {
		t.Errorf("the view counted %v transactions", n)
	}
	if n := totals(t, reg)["flyfs_metad_kv_txns_total"]; n != runs+1 {
		t.Errorf("the store counted the view's transaction too: %v", n)
	}
}

// totals sums every family's counters (and histograms' counts) by name.
func totals(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.Metric {
			switch {
			case m.Counter != nil:
				got[f.GetName()] += m.Counter.GetValue()
			case m.Histogram != nil:
				got[f.GetName()] += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return got
}
