package main

import (
	"strings"
	"testing"

	"github.com/flyfs/flyfs/e2e/harness"
)

// flyfs admin wait: ready once every chain serves and the metad asked for
// are registered; asked for more than run, it gives up at --timeout saying
// what is missing.
func TestAdminWait(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{})
	wait := func(args ...string) (string, error) {
		return run(t, append([]string{"admin", "wait", "--mgmtd", strings.Join(c.MgmtdAddrs(), ","), "--token", c.Token}, args...)...)
	}
	if out, err := wait("--timeout", "30s"); err != nil || !strings.Contains(out, "cluster ready") {
		t.Fatalf("admin wait on a running cluster: %v\n%s", err, out)
	}
	out, err := wait("--timeout", "1s", "--metad", "3")
	if err == nil || !strings.Contains(out+err.Error(), "1 of 3 metad registered") {
		t.Fatalf("admin wait for 3 metad with 1 running: %v\n%s", err, out)
	}
}
