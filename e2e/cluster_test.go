package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv/etcdkv/etcdtest"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// TestManagedClusterProcesses runs two `flyfs mgmtd` on a real etcd, three
// managed `flyfs storaged`, creates chains with `flyfs admin create-chains`,
// then kills processes with SIGKILL: a storaged (its chains drop to two
// replicas and heal when it returns), and the primary mgmtd (the other takes
// over and handles the next storage failure).
func TestManagedClusterProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := flyfsBinary(t)
	dir := t.TempDir()
	etcd := etcdtest.Start(t)
	const token, T = "e2e", 1500 * time.Millisecond
	mgmtdAddrs := []string{freeAddr(t), freeAddr(t)}
	mgmtds := make([]*proc, 2)
	startMgmtd := func(i int) {
		mgmtds[i] = startProc(t, bin, filepath.Join(dir, fmt.Sprintf("m%d.log", i+1)), "mgmtd",
			"--id", fmt.Sprintf("m%d", i+1), "--listen", mgmtdAddrs[i], "--kv", "etcd", "--etcd-endpoints", etcd.Endpoint,
			"--etcd-prefix", "/e2e-cluster/", "--token", token, "--heartbeat-timeout", T.String())
		waitListening(t, mgmtdAddrs[i])
	}
	startMgmtd(0)
	startMgmtd(1)
	admin := func(args ...string) string {
		t.Helper()
		full := append([]string{"admin", "--mgmtd", strings.Join(mgmtdAddrs, ","), "--token", token}, args...)
		var out []byte
		var err error
		for try := 0; try < 50; try++ { // the first primary may still be taking its lease
			if out, err = exec.Command(bin, full...).CombinedOutput(); err == nil {
				return string(out)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("flyfs %v: %v\n%s", full, err, out)
		return ""
	}
	out := admin("create-chains", "--nodes", "1,2,3", "--replicas", "3", "--chains", "2", "--layout", "simple")
	t.Logf("create-chains:\n%s", out)

	storageAddrs := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	storages := make([]*proc, 3)
	startStorage := func(i int) {
		storages[i] = startProc(t, bin, filepath.Join(dir, fmt.Sprintf("n%d.log", i+1)), "storaged",
			"--node", fmt.Sprint(i+1), "--listen", storageAddrs[i], "--data", filepath.Join(dir, fmt.Sprintf("disk%d", i+1)),
			"--mgmtd", strings.Join(mgmtdAddrs, ","), "--token", token, "--heartbeat-timeout", T.String())
		waitListening(t, storageAddrs[i])
	}
	for i := range storages {
		startStorage(i)
	}
	rc := rpc.NewClient(rpc.Options{Token: token})
	defer rc.Close()
	ctx := context.Background()
	src, err := client.NewMgmtdSource(ctx, mgmtdAddrs, rc, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	waitFor := func(d time.Duration, what string, cond func(*routing.Info) bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			src.Refresh(ctx, 0)
			if cond(src.Current()) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s never happened; chains:\n%s", what, admin("chains"))
	}
	healthy := func(in *routing.Info) bool {
		if len(in.Chains) != 2 {
			return false
		}
		for _, c := range in.Chains {
			for _, tg := range c.Targets {
				if tg.Public != routing.Serving {
					return false
				}
			}
		}
		return true
	}
	nodeOffline := func(n routing.NodeID) func(*routing.Info) bool {
		return func(in *routing.Info) bool {
			found := false
			for _, c := range in.Chains {
				for _, tg := range c.Targets {
					if tg.Node == n {
						found = true
						if tg.Public != routing.Offline {
							return false
						}
					}
				}
			}
			return found
		}
	}
	waitFor(20*T, "all chains serving", healthy)

	cl := client.NewChunkIO(src, rc, 20*time.Second)
	want := map[layout.ChunkID][]byte{}
	write := func(i uint64) {
		t.Helper()
		chunk := layout.MakeChunkID(77, i)
		want[chunk] = bytes.Repeat([]byte{byte(i)}, 50_000+int(i))
		if _, err := cl.Write(ctx, routing.ChainID(1+i%2), chunk, 0, want[chunk], 1<<20); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	for i := uint64(0); i < 10; i++ {
		write(i)
	}
	// kill -9 a storaged: its targets go offline; writes go on; it returns and is synced.
	storages[1].kill()
	waitFor(20*T, "node 2 offline", nodeOffline(2))
	for i := uint64(10); i < 20; i++ {
		write(i)
	}
	startStorage(1)
	waitFor(40*T, "node 2 back and serving", healthy)

	// kill -9 the primary mgmtd: the other takes over and handles a failure.
	m := client.NewMgmtd(rc, mgmtdAddrs)
	pr, err := m.GetPrimary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range mgmtdAddrs {
		if a == pr.Addr {
			mgmtds[i].kill()
		}
	}
	storages[2].kill()
	waitFor(40*T, "node 3 offline under the new primary", nodeOffline(3))
	for i := uint64(20); i < 25; i++ {
		write(i)
	}
	for chunk, data := range want {
		got, err := cl.Read(ctx, client.ReadIO{Chain: routing.ChainID(1 + chunk.Index()%2), Chunk: chunk, Length: 1 << 20}, false)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("chunk %v: %d bytes, %v", chunk, len(got), err)
		}
	}
	nodes, err := m.ListNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	primaries := 0
	for _, md := range nodes.Mgmtds {
		if md.Primary {
			primaries++
		}
	}
	if primaries != 1 {
		t.Fatalf("mgmtds after failover: %+v", nodes.Mgmtds)
	}
	t.Logf("chains at the end:\n%s", admin("chains"))
	_ = mgmtdapi.MethodHeartbeat
}
