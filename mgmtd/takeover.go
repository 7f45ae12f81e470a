package mgmtd

import "time"

// A standby takes an expired lease only after it has seen that same expired
// record (same term, same expiry) in lease rounds spanning takeoverWait,
// every round in between reaching the store. A store that stalled (etcd
// under load, a long fsync) stalls the holder's renewals and the standby's
// rounds alike; when it answers again, the first round a standby gets in
// finds the lease expired only because nobody could write. Waiting gives
// the holder a working store to renew in first, so a stall costs no change
// of primary; a holder that is really gone is replaced takeoverWait later.
//
// expiredWatch is that decision as a pure state machine: rounds in, a
// verdict out, no clock of its own.
type expiredWatch struct {
	seen   bool
	term   uint64
	expiry int64     // the expired record watched
	since  time.Time // the first round that saw it
}

// failed notes a round that did not reach the store: the watch starts over.
func (w *expiredWatch) failed() { w.seen = false }

// observe notes a round at now that read cur, expired by then, and says
// whether it may take the lease over.
func (w *expiredWatch) observe(cur leaseRecord, now time.Time, wait time.Duration) bool {
	if !w.seen || w.term != cur.Term || w.expiry != cur.Expiry {
		*w = expiredWatch{seen: true, term: cur.Term, expiry: cur.Expiry, since: now}
	}
	return now.Sub(w.since) >= wait
}

// clear notes a round that found the lease alive, or took it.
func (w *expiredWatch) clear() { w.seen = false }
