// Package kvmetrics turns the KV store's hooks (kv.Hooks) into Prometheus
// metrics: transactions, retries, conflicts and commit latency, named after
// the role whose transactions they count (flyfs_<role>_kv_*).
package kvmetrics

import (
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/observe"
	"github.com/prometheus/client_golang/prometheus"
)

// Hooks registers the KV families of role on reg and returns the hooks that
// feed them; give them to kv.Options.Hooks or DB.WithHooks. A nil reg
// returns nil (no hooks). Several stores of one role on one registry share
// the families.
func Hooks(reg prometheus.Registerer, role string) *kv.Hooks {
	if reg == nil {
		return nil
	}
	txns := observe.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "flyfs", Subsystem: role, Name: "kv_txns_total",
		Help: "KV transactions run (Run or RunRead, all attempts together), by type (read, write) and result (ok, error).",
	}, []string{"type", "result"}))
	txnDur := observe.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "flyfs", Subsystem: role, Name: "kv_txn_duration_seconds",
		Help:    "Duration of KV transactions including their retries, by type (read, write).",
		Buckets: prometheus.ExponentialBuckets(100e-6, 4, 10), // 100µs .. 26s
	}, []string{"type"}))
	retries := observe.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "flyfs", Subsystem: role, Name: "kv_retries_total",
		Help: "KV transaction attempts run again after a retryable error, by reason (conflict, too_old, maybe_committed, transient, too_long).",
	}, []string{"reason"}))
	conflicts := observe.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "flyfs", Subsystem: role, Name: "kv_conflicts_total",
		Help: "KV commits refused because a key or range the transaction read was written meanwhile.",
	}))
	commitDur := observe.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "flyfs", Subsystem: role, Name: "kv_commit_duration_seconds",
		Help:    "Duration of KV commits that reached the engine, failed ones included.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 4, 10), // 50µs .. 13s
	}))
	for _, r := range []string{"conflict", "too_old", "maybe_committed", "too_long", "transient"} {
		retries.WithLabelValues(r) // exported from the start, at 0
	}
	var (
		okRead, okWrite   = txns.WithLabelValues("read", "ok"), txns.WithLabelValues("write", "ok")
		errRead, errWrite = txns.WithLabelValues("read", "error"), txns.WithLabelValues("write", "error")
		durRead, durWrite = txnDur.WithLabelValues("read"), txnDur.WithLabelValues("write")
	)
	return &kv.Hooks{
		Txn: func(ro bool, _ int, d time.Duration, err error) {
			switch {
			case ro && err == nil:
				okRead.Inc()
			case ro:
				errRead.Inc()
			case err == nil:
				okWrite.Inc()
			default:
				errWrite.Inc()
			}
			if ro {
				durRead.Observe(d.Seconds())
			} else {
				durWrite.Observe(d.Seconds())
			}
		},
		Retry: func(_ bool, err error) {
			retries.WithLabelValues(reason(err)).Inc()
		},
		Commit: func(d time.Duration, err error) {
			commitDur.Observe(d.Seconds())
			if kv.CodeOf(err) == kv.CodeConflict {
				conflicts.Inc()
			}
		},
	}
}

// reason names a retryable error for the retries label.
func reason(err error) string {
	switch kv.CodeOf(err) {
	case kv.CodeConflict:
		return "conflict"
	case kv.CodeTooOld:
		return "too_old"
	case kv.CodeMaybeCommitted:
		return "maybe_committed"
	case kv.CodeTxnTooLong:
		return "too_long"
	}
	return "transient"
}
