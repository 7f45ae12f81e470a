package multihost

import (
	"time"

	"testing"

	"github.com/flyfs/flyfs/core/routing"
)

// Every scenario runs on a fresh cluster (3 etcd, 2 mgmtd, 2 metad, 4
// storaged with 8 chains of 3 replicas, and the FUSE mount and S3 gateway
// where a scenario writes through them), with a workload writing files and
// overwriting registers throughout, and ends with the checks of
// Scenario.Check.

// (a) kill -9 storaged one at a time during writes through the client, the
// mount and `aws s3 cp`; each restarts on its data and is recovered.
func TestKillStoragedOneAtATime(t *testing.T) {
	runScenario(t, true, Config{Mount: true, Gateway: true},
		WorkloadConfig{FUSEWriters: 1, S3Writers: 1}, func(s *Scenario) {
			rounds := 2
			if faultsMode() == "full" {
				rounds = 4
			}
			T := s.C.cfg.T
			for r := 0; r < rounds; r++ {
				v := s.Victims(1)[0]
				s.Pause(500*time.Millisecond, 2*time.Second)
				s.T.Logf("round %d: kill -9 storaged%d", r+1, v+1)
				s.C.Storaged[v].Kill()
				s.C.WaitFor(10*T, "its targets offline", func(in *routing.Info) bool { return NodeIs(in, v, routing.Offline) })
				s.Pause(500*time.Millisecond, 2*time.Second)
				s.C.Storaged[v].Start()
				s.C.WaitHealthy(30 * T)
			}
		})
}

// (a) kill -9 two storaged at once (each chain keeps at least one of its
// three replicas), during writes; both restart and are recovered.
func TestKillStoragedTwoAtATime(t *testing.T) {
	runScenario(t, false, Config{Mount: true, Gateway: true},
		WorkloadConfig{FUSEWriters: 1, S3Writers: 1}, func(s *Scenario) {
			T := s.C.cfg.T
			for r := 0; r < 2; r++ {
				vs := s.Victims(2)
				s.Pause(500*time.Millisecond, 2*time.Second)
				s.T.Logf("round %d: kill -9 storaged%d and storaged%d", r+1, vs[0]+1, vs[1]+1)
				s.C.Storaged[vs[0]].Kill()
				s.C.Storaged[vs[1]].Kill()
				s.C.WaitFor(10*T, "their targets offline", func(in *routing.Info) bool {
					return NodeIs(in, vs[0], routing.Offline) && NodeIs(in, vs[1], routing.Offline)
				})
				s.Pause(time.Second, 3*time.Second)
				// They return one after the other, in a random order.
				s.C.Storaged[vs[1]].Start()
				s.Pause(0, time.Second)
				s.C.Storaged[vs[0]].Start()
				s.C.WaitHealthy(30 * T)
			}
		})
}
