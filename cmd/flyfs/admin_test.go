package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/mgmtd"
	"github.com/spf13/cobra"
)

// adminTestMgmtd starts an in-process mgmtd (T long enough that nobody fails
// during a test) and waits until it is primary.
func adminTestMgmtd(t *testing.T) string {
	t.Helper()
	db := memkv.Open(kv.Options{})
	t.Cleanup(func() { db.Close() })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	srv, err := mgmtd.New(mgmtd.Config{ID: "m1", Addr: addr, KV: db, HeartbeatTimeout: time.Minute,
		LeaseLength: 300 * time.Millisecond, RPC: rpc.Options{Token: "sekrit"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	deadline := time.Now().Add(5 * time.Second)
	for !srv.IsPrimary() {
		if time.Now().After(deadline) {
			t.Fatal("the test mgmtd did not become primary")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return addr
}

// adminRun runs `flyfs admin args...` against addr with stdin.
func adminRun(t *testing.T, addr, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := adminCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(append([]string{"--mgmtd", addr, "--token", "sekrit", "--timeout", "5s"}, args...))
	err := cmd.Execute()
	return out.String(), err
}

// adminRow returns the table row that starts with key (after spaces).
func adminRow(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == key {
			return line
		}
	}
	return ""
}

func TestAdminCreateChainsAndList(t *testing.T) {
	addr := adminTestMgmtd(t)

	out, err := adminRun(t, addr, "", "create-chains", "--nodes", "1,2,3", "--replicas", "3", "--chains", "3", "--layout", "simple", "--first-chain", "4")
	if err != nil {
		t.Fatalf("create-chains: %v\n%s", err, out)
	}
	for _, want := range []string{"created 3 chains", "3 disks on 3 nodes, 3 replicas, 3 chains"} {
		if !strings.Contains(out, want) {
			t.Errorf("create-chains output lacks %q:\n%s", want, out)
		}
	}
	row := adminRow(out, "4")
	if !regexp.MustCompile(`^4\s+401@\d/0\s+402@\d/0\s+403@\d/0$`).MatchString(strings.TrimSpace(row)) {
		t.Errorf("chain 4 row %q:\n%s", row, out)
	}

	out, err = adminRun(t, addr, "", "create-chains", "--nodes", "1,2,3", "--chains", "2", "--first-chain", "5")
	if err == nil || !strings.Contains(err.Error(), "chain 5 exists already; choose a --first-chain above 6") {
		t.Errorf("overlapping create-chains: %v\n%s", err, out)
	}
	for _, bad := range [][]string{
		{"create-chains", "--chains", "2"},
		{"create-chains", "--nodes", "1,2", "--chains", "2", "--replicas", "3"},
		{"create-chains", "--nodes", "1,x", "--chains", "2"},
		{"create-chains", "--nodes", "1,2,3", "--chains", "2", "--layout", "fancy"},
	} {
		if out, err := adminRun(t, addr, "", bad...); err == nil {
			t.Errorf("%v succeeded:\n%s", bad, out)
		}
	}

	out, err = adminRun(t, addr, "", "chains", "--explain")
	if err != nil {
		t.Fatalf("chains: %v\n%s", err, out)
	}
	if !strings.Contains(out, "3 chains, 0 degraded") || !strings.Contains(out, "3 disks on 3 nodes") {
		t.Errorf("chains --explain:\n%s", out)
	}
	if row := adminRow(out, "5"); !strings.Contains(row, "ok") || !strings.Contains(row, "501@") || !strings.Contains(row, "serving/up-to-date") {
		t.Errorf("chain 5 row %q:\n%s", row, out)
	}
}

func TestAdminNodes(t *testing.T) {
	addr := adminTestMgmtd(t)
	if out, err := adminRun(t, addr, "", "create-chains", "--nodes", "1,2", "--replicas", "2", "--chains", "1"); err != nil {
		t.Fatalf("create-chains: %v\n%s", err, out)
	}
	rc := rpc.NewClient(rpc.Options{Token: "sekrit"})
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := client.NewMgmtd(rc, []string{addr}).Heartbeat(ctx, &mgmtdapi.HeartbeatReq{Node: 1, Addr: "10.0.0.1:9100", Seq: 1,
		Targets: []mgmtdapi.TargetReport{{Target: 101, Chain: 1, Local: routing.UpToDate}},
		Disks: []mgmtdapi.DiskReport{{Path: "/d0", UsedBytes: 3 << 30, FreeBytes: 5 << 30, CapacityBytes: 100 << 30, FS: "x", Encrypted: true},
			{Path: "/d1", UsedBytes: 1 << 30, FreeBytes: 5 << 30, CapacityBytes: 100 << 30, FS: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := adminRun(t, addr, "", "nodes")
	if err != nil {
		t.Fatalf("nodes: %v\n%s", err, out)
	}
	if row := adminRow(out, "1"); !strings.Contains(row, "10.0.0.1:9100") || !strings.Contains(row, "alive") ||
		!strings.Contains(row, "ago") || !strings.Contains(row, "101 up-to-date") || !strings.Contains(row, "4.0 GiB used, 5.0 GiB free of 100.0 GiB (95.0 % used) on 1 file system(s), 2 over 90 % used, 1 of 2 encrypted at rest") {
		t.Errorf("node 1 row %q:\n%s", row, out)
	}
	if row := adminRow(out, "2"); !strings.Contains(row, "no heartbeat") || !strings.Contains(row, "never") {
		t.Errorf("node 2 row %q:\n%s", row, out)
	}
	if row := adminRow(out, "m1"); !strings.Contains(row, addr) || !strings.Contains(row, "primary") {
		t.Errorf("mgmtd row %q:\n%s", row, out)
	}
}

func TestAdminOfflineOnlineTarget(t *testing.T) {
	addr := adminTestMgmtd(t)
	if out, err := adminRun(t, addr, "", "create-chains", "--nodes", "1,2,3", "--replicas", "3", "--chains", "3", "--layout", "simple"); err != nil {
		t.Fatalf("create-chains: %v\n%s", err, out)
	}

	out, err := adminRun(t, addr, "n\n", "offline-target", "302")
	if err == nil || !strings.Contains(out, "Hold it offline?") || !strings.Contains(err.Error(), "not confirmed") {
		t.Errorf("declined offline-target: %v\n%s", err, out)
	}
	if out, _ := adminRun(t, addr, "", "chains"); !strings.Contains(out, "0 degraded") {
		t.Errorf("a declined offline-target changed something:\n%s", out)
	}

	out, err = adminRun(t, addr, "y\n", "offline-target", "302")
	if err != nil || !strings.Contains(out, "target 302 is held offline") || !strings.Contains(out, "302@") {
		t.Fatalf("offline-target: %v\n%s", err, out)
	}
	out, err = adminRun(t, addr, "", "chains")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.Contains(out, "1 degraded") || len(lines) < 3 || !strings.HasPrefix(lines[2], "3 ") ||
		!regexp.MustCompile(`302@\d/0 offline/offline$`).MatchString(lines[2]) || !strings.Contains(lines[2], "degraded") {
		t.Errorf("chains after offline-target (degraded chain 3 first, 302 at its tail):\n%s", out)
	}

	out, err = adminRun(t, addr, "", "online-target", "302")
	if err != nil || !strings.Contains(out, "target 302 is released") {
		t.Errorf("online-target: %v\n%s", err, out)
	}
	if _, err := adminRun(t, addr, "", "offline-target", "--yes", "999"); err == nil || !strings.Contains(err.Error(), "no chain has target 999") {
		t.Errorf("offline-target of an unknown target: %v", err)
	}
}

// TestMgmtdCommand runs `flyfs mgmtd` on the mem engine until canceled and
// administers it meanwhile.
func TestMgmtdCommand(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cmd *cobra.Command = mgmtdCmd()
	var logs bytes.Buffer
	cmd.SetOut(&logs)
	cmd.SetErr(&logs)
	cmd.SetArgs([]string{"--id", "solo", "--listen", addr, "--kv", "mem", "--token", "sekrit", "--heartbeat-timeout", "3s"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := adminRun(t, addr, "", "nodes")
		if err == nil && strings.Contains(adminRow(out, "solo"), "primary") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flyfs mgmtd never answered as primary: %v\n%s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("mgmtd: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mgmtd did not stop")
	}
}

// TestAdminTokenAndAddressFromEnvironment: FLYFS_TOKEN and FLYFS_MGMTD stand
// in for the flags; a wrong token is refused with a named reason.
func TestAdminTokenAndAddressFromEnvironment(t *testing.T) {
	addr := adminTestMgmtd(t)
	t.Setenv("FLYFS_MGMTD", addr)
	t.Setenv("FLYFS_TOKEN", "sekrit")
	run := func(args ...string) (string, error) {
		cmd := adminCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"--timeout", "2s"}, args...))
		err := cmd.Execute()
		return out.String(), err
	}
	if out, err := run("chains"); err != nil || !strings.Contains(out, "0 chains") {
		t.Errorf("with the environment: %v\n%s", err, out)
	}
	if _, err := run("chains", "--token", "wrong"); err == nil || !strings.Contains(err.Error(), "Unauthenticated") {
		t.Errorf("with a wrong token: %v", err)
	}
}

// TestAdminOfflineLastServing: offline-target refuses a chain's last
// serving replica, saying what would stop, until --force.
func TestAdminOfflineLastServing(t *testing.T) {
	addr := adminTestMgmtd(t)
	if out, err := adminRun(t, addr, "", "create-chains", "--nodes", "1", "--replicas", "1", "--chains", "1", "--layout", "simple"); err != nil {
		t.Fatalf("create-chains: %v\n%s", err, out)
	}
	out, _ := adminRun(t, addr, "", "chains")
	m := regexp.MustCompile(`(\d+)@`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no target in:\n%s", out)
	}
	_, err := adminRun(t, addr, "", "offline-target", "--yes", m[1])
	if err == nil || !strings.Contains(err.Error(), "last serving replica of chain 1") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("offline-target of the last serving replica: %v", err)
	}
	if out, _ := adminRun(t, addr, "", "chains"); !strings.Contains(out, "0 degraded") || strings.Contains(out, "unavailable ") && !strings.Contains(out, "0 unavailable") {
		t.Errorf("the refused offline-target changed something:\n%s", out)
	}
	if out, err := adminRun(t, addr, "", "offline-target", "--yes", "--force", m[1]); err != nil || !strings.Contains(out, "is held offline") {
		t.Fatalf("offline-target --force: %v\n%s", err, out)
	}
}

// TestAdminMaintenance: maintenance start shows its plan and asks, holds
// what the chains can spare and names the last serving replica it skips;
// end releases.
func TestAdminMaintenance(t *testing.T) {
	addr := adminTestMgmtd(t)
	if out, err := adminRun(t, addr, "", "create-chains", "--nodes", "1,2", "--replicas", "2", "--chains", "2", "--layout", "simple"); err != nil {
		t.Fatalf("create-chains: %v\n%s", err, out)
	}
	if out, err := adminRun(t, addr, "", "create-chains", "--nodes", "2", "--replicas", "1", "--chains", "1", "--layout", "simple", "--first-chain", "3"); err != nil {
		t.Fatalf("create-chains: %v\n%s", err, out)
	}
	out, err := adminRun(t, addr, "n\n", "maintenance", "start", "2")
	if err == nil || !strings.Contains(out, "would:") || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("declined maintenance: %v\n%s", err, out)
	}
	if out, _ := adminRun(t, addr, "", "chains"); !strings.Contains(out, "0 degraded") {
		t.Fatalf("a declined maintenance changed something:\n%s", out)
	}
	out, err = adminRun(t, addr, "", "maintenance", "start", "--dry-run", "2")
	if err != nil || strings.Count(out, "hold offline") != 2 || !strings.Contains(out, "skip: the last serving replica of chain") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	out, err = adminRun(t, addr, "", "maintenance", "start", "--yes", "2")
	if err != nil || strings.Count(out, "held offline") != 2 {
		t.Fatalf("maintenance start: %v\n%s", err, out)
	}
	if out, _ := adminRun(t, addr, "", "chains"); !strings.Contains(out, "2 degraded") {
		t.Errorf("chains in maintenance:\n%s", out)
	}
	out, err = adminRun(t, addr, "", "maintenance", "end", "2")
	if err != nil || strings.Count(out, "released") != 2 {
		t.Fatalf("maintenance end: %v\n%s", err, out)
	}
	if _, err := adminRun(t, addr, "", "maintenance", "start", "--yes", "9"); err == nil || !strings.Contains(err.Error(), "no targets") {
		t.Errorf("maintenance of a node without targets: %v", err)
	}
	// Every change above is in the audit trail, newest first, with who.
	out, err = adminRun(t, addr, "", "audit")
	if err != nil {
		t.Fatalf("audit: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 5 || !strings.Contains(lines[1], "end maintenance of node 2: released") || !strings.Contains(lines[2], "start maintenance of node 2: held") ||
		!strings.Contains(lines[2], "kept 301 (the last serving replica of chain 3)") || !strings.Contains(lines[1], "flyfs admin: ") || !strings.Contains(out, "set chains 3") {
		t.Errorf("audit trail:\n%s", out)
	}
}
