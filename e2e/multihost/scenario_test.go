package multihost

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// Scenario is one fault scenario's run: a cluster, a workload over it, and
// a random source from the scenario's seed that picks victims and pauses.
type Scenario struct {
	T    *testing.T
	C    *Cluster
	W    *Workload
	Rng  *mrand.Rand
	Seed uint64
}

// Gap fails the scenario with a shortfall of the code under test that it
// shows, named as such: a known gap is a failing test, never a skip.
func (s *Scenario) Gap(format string, args ...any) {
	s.T.Helper()
	s.T.Errorf("GAP: %s", fmt.Sprintf(format, args...))
}

// faultsMode is FLYFS_FAULTS: "" or "ci" runs the fast subset, "full"
// everything, "off" nothing.
func faultsMode() string { return os.Getenv("FLYFS_FAULTS") }

// scenarioSeed is FLYFS_FAULTS_SEED, or a fresh random seed.
func scenarioSeed(t *testing.T) uint64 {
	if s := os.Getenv("FLYFS_FAULTS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("FLYFS_FAULTS_SEED=%q: %v", s, err)
		}
		return v
	}
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1
}

// runScenario starts a cluster and a workload, runs the fault, then heals
// everything and checks: every acknowledged file is there with its
// checksum, fsck is clean, every replica holds the same bytes, and the
// register history is linearizable. ci marks the scenarios of the fast
// default subset; the others run with FLYFS_FAULTS=full.
func runScenario(t *testing.T, ci bool, cfg Config, wcfg WorkloadConfig, fault func(s *Scenario)) {
	switch mode := faultsMode(); {
	case mode == "off":
		t.Skip("FLYFS_FAULTS=off")
	case mode != "full" && !ci:
		t.Skip("part of the full fault suite: run with FLYFS_FAULTS=full")
	case testing.Short():
		t.Skip("starts a multi-host cluster")
	}
	seed := scenarioSeed(t)
	t.Logf("seed %d (reproduce the fault schedule: FLYFS_FAULTS_SEED=%d FLYFS_FAULTS=full go test -run '^%s$' ./e2e/multihost/)", seed, seed, t.Name())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d: FLYFS_FAULTS_SEED=%d FLYFS_FAULTS=full go test -count=1 -run '^%s$' ./e2e/multihost/", seed, seed, t.Name())
		}
	})
	c := Start(t, cfg)
	s := &Scenario{T: t, C: c, Seed: seed, Rng: mrand.New(mrand.NewPCG(seed, 0xfa17))}
	s.W = StartWorkload(t, c, seed, wcfg)
	start := time.Now()
	fault(s)
	s.W.Stop()
	t.Logf("fault phase %v; workload: %s", time.Since(start).Round(time.Millisecond), s.W.Summary())
	c.Net.HealAll()
	for _, h := range s.W.Hung() {
		s.Gap("a client operation hung past %v: %s (an RPC to a frozen or cut-off node has no deadline of its own, and a routing change does not abort it)", opTimeout, h)
	}
	c.WaitHealthy(30 * cfg.withDefaults().T)
	s.Check()
}

// Check runs the checks every scenario ends with.
func (s *Scenario) Check() {
	t := s.T
	t.Helper()
	if len(s.W.Acked()) == 0 {
		t.Errorf("the workload had no write acknowledged: nothing was tested (%s)", s.W.Summary())
	}
	s.W.Verify(t)
	s.C.Fsck()
	s.C.CheckConverged(t, 30*time.Second)
	s.W.CheckLinearizable(t)
}

// Pause sleeps a random time in [lo, hi) drawn from the seed.
func (s *Scenario) Pause(lo, hi time.Duration) {
	time.Sleep(lo + time.Duration(s.Rng.Int64N(int64(hi-lo))))
}

// Victims picks k distinct storage nodes (0-based).
func (s *Scenario) Victims(k int) []int {
	return s.Rng.Perm(len(s.C.Storaged))[:k]
}
