package mgmtd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flyfs/flyfs/core/kv"
)

// Primary election. Every mgmtd runs renewLease every LeaseLength/3: one
// transaction on the lease record that extends it when this process holds
// it (in the same term, even when the round ran late and it lapsed), takes
// it when it is absent or expired (starting a new term), and otherwise only
// notes who the primary is. The same transaction refreshes this mgmtd's
// entry in the registry of cluster managers.
//
// A process acts as primary (primaryTerm) only while its own clock says the
// lease has more than LeaseLength/3 left, measured from the start of the
// transaction that last renewed it; the lease record's expiry in the KV store
// is wall-clock time, so other mgmtd can judge it. Clock skew between mgmtd
// can at worst let a successor take over while the old primary still thinks
// it holds the lease; the old primary's writes then fail their lease check
// (write.go), so skew costs availability, never consistency.

// errLeaseLost: the lease is no longer this process's in the term it acts in.
var errLeaseLost = errors.New("mgmtd: lease lost")

func (s *Server) leaseLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.renewEvery())
	defer tick.Stop()
	for {
		s.renewLease()
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// renewLease runs one round of the election and acts on its outcome: a new
// term is loaded (takeover), a lost one is dropped.
func (s *Server) renewLease() {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.LeaseLength)
	defer cancel()
	started := time.Now()
	var rec leaseRecord
	var mine bool
	why := "the lease is ours: the state was not loaded yet" // what a takeover logs as its cause
	var watch expiredWatch
	err := s.cfg.KV.Run(ctx, func(tx kv.Txn) error {
		now := time.Now()
		watch = s.expired
		cur, found, err := readLease(ctx, tx)
		if err != nil {
			return err
		}
		expiry := now.Add(s.cfg.LeaseLength).UnixNano()
		switch {
		case found && cur.Holder == s.cfg.ID && cur.Instance == s.instance:
			// Ours: extend it in the same term, even if this round ran late
			// and it lapsed meanwhile. Nobody took it (the record is still
			// ours, and a takeover would conflict with this transaction), so
			// a new term would only make this primary depose itself.
			cur.Expiry, cur.Addr = expiry, s.cfg.Addr
			rec, mine = cur, true
			tx.Set(leaseKey, encode(rec))
		case found && cur.Expiry > 0 && cur.Expiry <= now.UnixNano() && !watch.observe(cur, now, s.cfg.takeoverWait()):
			// Expired, but not yet for long enough (takeover.go).
			rec, mine = cur, false
		case !found || cur.Expiry <= now.UnixNano():
			watch.clear()
			switch {
			case !found:
				why = "no primary yet"
			case cur.Expiry == 0:
				why = fmt.Sprintf("%s gave the lease up (term %d)", cur.Holder, cur.Term)
			default:
				why = fmt.Sprintf("the lease of %s (term %d) expired %v ago", cur.Holder, cur.Term, time.Duration(now.UnixNano()-cur.Expiry).Round(time.Millisecond))
			}
			rec = leaseRecord{Holder: s.cfg.ID, Addr: s.cfg.Addr, Instance: s.instance, Term: cur.Term + 1,
				Start: now.UnixNano(), Expiry: expiry}
			mine = true
			tx.Set(leaseKey, encode(rec))
		default:
			watch.clear()
			rec, mine = cur, false
		}
		tx.Set(mgmtdKey(s.cfg.ID), encode(mgmtdRecord{ID: s.cfg.ID, Addr: s.cfg.Addr,
			Expiry: now.Add(3 * s.cfg.LeaseLength).UnixNano()}))
		return nil
	})
	if err != nil {
		s.expired.failed()
		if s.ctx.Err() == nil {
			s.log.Warn("lease round failed", "err", err)
		}
		return // the lease, if ours, lapses on its own (primaryTerm checks the clock)
	}
	s.expired = watch
	s.mu.Lock()
	s.lease, s.leaseKnown = rec, true
	if mine {
		s.leaseUntil = started.Add(s.cfg.LeaseLength)
	}
	t := s.term
	s.mu.Unlock()
	switch {
	case mine && (t == nil || t.id != rec.Term):
		s.takeover(ctx, rec, why)
	case !mine && t != nil:
		s.stepDown(t.id, "lease held by "+rec.Holder)
	}
}

// takeover loads the cluster state for a new term and starts acting as
// primary. Holding writeMu keeps any write of an older term out.
func (s *Server) takeover(ctx context.Context, rec leaseRecord, why string) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if s.term != nil { // an older term of ours, lost in between unnoticed
		s.log.Warn("no longer primary", "term", s.term.id, "why", "the lease was taken again in a newer term")
		s.term = nil
		s.metrics.leaseChange("lost")
	}
	s.mu.Unlock()
	st, err := loadState(ctx, s.cfg.KV)
	if err != nil {
		s.log.Error("took the lease but cannot load the cluster state; retrying next round", "term", rec.Term, "err", err)
		return
	}
	now := time.Now()
	t := newTerm(rec.Term, st, now, now.Add(s.cfg.Bootstrapping))
	s.cache.Store(st.info)
	s.mu.Lock()
	if s.lease.Term != rec.Term || s.lease.Instance != s.instance {
		s.mu.Unlock()
		return
	}
	s.term = t
	s.mu.Unlock()
	s.metrics.leaseChange("acquired")
	s.log.Info("became primary", "why", why, "term", rec.Term, "routing_version", st.info.Version,
		"chains", len(st.info.Chains), "nodes", len(st.info.Nodes), "bootstrapping", s.cfg.Bootstrapping)
	s.kickScan()
}

// stepDown stops acting as primary of term id.
func (s *Server) stepDown(id uint64, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term != nil && s.term.id == id {
		s.term = nil
		s.metrics.leaseChange("lost")
		s.log.Warn("no longer primary", "term", id, "why", why)
	}
}

// primaryTerm returns the term this process acts as primary in, or nil.
func (s *Server) primaryTerm() *term {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term == nil || !time.Now().Before(s.leaseUntil.Add(-s.cfg.leaseMargin())) {
		return nil
	}
	return s.term
}

// checkLease aborts a write transaction unless this process still holds the
// lease in term id. Reading the lease key also puts it in the transaction's
// conflict set, so a takeover committed concurrently aborts the write.
func (s *Server) checkLease(ctx context.Context, tx kv.Txn, id uint64) error {
	rec, found, err := readLease(ctx, tx)
	if err != nil {
		return err
	}
	if !found || rec.Holder != s.cfg.ID || rec.Instance != s.instance || rec.Term != id {
		return errLeaseLost
	}
	return nil
}

// noteLease re-reads the lease record, so NotPrimary answers name the
// current primary without waiting for the next lease round.
func (s *Server) noteLease(ctx context.Context) {
	var rec leaseRecord
	var found bool
	err := s.cfg.KV.RunRead(ctx, func(tx kv.ReadTxn) error {
		var err error
		rec, found, err = readLease(ctx, tx)
		return err
	})
	if err != nil || !found {
		return
	}
	s.mu.Lock()
	s.lease, s.leaseKnown = rec, true
	s.mu.Unlock()
}

// primaryAddr is the address of the primary as last seen, or "" when no
// valid lease is known (or this process holds it but may not act on it).
func (s *Server) primaryAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.leaseKnown || time.Now().UnixNano() >= s.lease.Expiry {
		return ""
	}
	if s.lease.Instance == s.instance {
		return ""
	}
	return s.lease.Addr
}

// releaseLease gives the lease up (when this process holds it) and leaves
// the registry, so a successor need not wait for the lease to expire.
func (s *Server) releaseLease(ctx context.Context) error {
	return s.cfg.KV.Run(ctx, func(tx kv.Txn) error {
		tx.Clear(mgmtdKey(s.cfg.ID))
		cur, found, err := readLease(ctx, tx)
		if err != nil || !found || cur.Holder != s.cfg.ID || cur.Instance != s.instance {
			return err
		}
		cur.Expiry = 0 // keep Term, so the next holder's term is newer
		tx.Set(leaseKey, encode(cur))
		return nil
	})
}
