package storaged_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/storaged"
)

// flipOnDisk inverts one byte, at offset pos of the chunk whose content
// starts with content[:64], in a node's data files: bit rot under a running
// storaged. Blocks start at multiples of 64 KiB (the smallest block size).
func flipOnDisk(t *testing.T, diskDir string, content []byte, pos int64) {
	t.Helper()
	file, off := harness.FindChunkBlock(t, diskDir, content[:64])
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, off+pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off+pos); err != nil {
		t.Fatal(err)
	}
}

// diskStats sums a node's disks' stats.
func diskStats(t *testing.T, rc *rpc.Client, addr string) storageapi.DiskStats {
	t.Helper()
	st, err := storageapi.Client{RPC: rc}.Stats(ctx, addr)
	if err != nil {
		t.Fatalf("stats of %s: %v", addr, err)
	}
	var sum storageapi.DiskStats
	for _, d := range st.Disks {
		sum.ChecksumErrors += d.ChecksumErrors
		sum.RepairedChunks += d.RepairedChunks
		sum.RepairFailures += d.RepairFailures
		sum.UnrepairedChunks += d.UnrepairedChunks
	}
	return sum
}

// eventually polls cond for up to d; it reports whether cond held.
func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// A byte flipped in one replica's chunk file: the replica refuses the read
// (DataLoss), clients still read the right bytes, and the replica repairs
// itself from another one: it serves the right bytes again with the same
// versions, for good (a restart keeps the repair), and counts it.
func TestCorruptReplicaIsRepaired(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, NoSync: true})
	cl := c.Client(5 * time.Second)
	rc := c.RPCClient("client")
	chunk := layout.MakeChunkID(77, 0)
	data := pattern(77, 300<<10) // five segments, the last one partial
	if _, err := cl.Write(ctx, 1, chunk, 0, data, chunkSize); err != nil {
		t.Fatal(err)
	}
	// Version 2 changes the head, so only the current block starts with it.
	copy(data, pattern(7, 100))
	if _, err := cl.Write(ctx, 1, chunk, 0, data[:100], chunkSize); err != nil {
		t.Fatal(err)
	}
	const bad = 1 // the middle replica
	flipOnDisk(t, c.Nodes[bad].Dir, data, 2<<16+1234)

	if _, err := replicaRead(t, c, bad, 1, chunk, chunkSize); rpc.CodeOf(err) != rpc.DataLoss {
		t.Fatalf("read of the flipped replica: %v, want DataLoss", err)
	}
	for i := 0; i < 6; i++ {
		got, err := cl.Read(ctx, client.ReadIO{Chain: 1, Chunk: chunk, Length: chunkSize}, false)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("client read %d with one corrupt replica: %d bytes, %v", i, len(got), err)
		}
	}
	if !eventually(10*time.Second, func() bool {
		got, err := replicaRead(t, c, bad, 1, chunk, chunkSize)
		return err == nil && bytes.Equal(got, data)
	}) {
		got, err := replicaRead(t, c, bad, 1, chunk, chunkSize)
		t.Fatalf("the corrupt replica is not repaired: %d bytes, %v", len(got), err)
	}
	st := diskStats(t, rc, c.Nodes[bad].Addr)
	if st.RepairedChunks != 1 || st.ChecksumErrors == 0 || st.UnrepairedChunks != 0 {
		t.Fatalf("stats of the repaired node: %+v", st)
	}
	for _, n := range []int{0, 2} {
		if st := diskStats(t, rc, c.Nodes[n].Addr); st.RepairedChunks != 0 || st.ChecksumErrors != 0 {
			t.Fatalf("stats of healthy node %s: %+v", c.Nodes[n].Name, st)
		}
	}
	checkConverged(t, c) // same versions, length and checksum everywhere

	// The repair is durable, and writing goes on from the same version.
	c.Kill(bad)
	if err := c.Start(bad); err != nil {
		t.Fatal(err)
	}
	if got, err := replicaRead(t, c, bad, 1, chunk, chunkSize); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after a restart the repaired replica serves %d bytes, %v", len(got), err)
	}
	if meta, err := cl.Write(ctx, 1, chunk, 0, []byte("next"), chunkSize); err != nil || meta.CommitVer != 3 {
		t.Fatalf("write after the repair: %+v %v", meta, err)
	}
	checkConverged(t, c)
}

// With every replica corrupt there is no good copy: nothing is "repaired"
// from a copy that fails the check; the corruption stays reported (DataLoss,
// failed attempts and an unrepaired chunk in the stats) until the chunk is
// rewritten, after which the report clears.
func TestCorruptEverywhereStaysReported(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, NoSync: true})
	cl := c.Client(2 * time.Second)
	rc := c.RPCClient("client")
	chunk := layout.MakeChunkID(78, 0)
	data := pattern(78, 200<<10)
	if _, err := cl.Write(ctx, 1, chunk, 0, data, chunkSize); err != nil {
		t.Fatal(err)
	}
	for n := range c.Nodes {
		flipOnDisk(t, c.Nodes[n].Dir, data, int64(n)<<16+99) // a different segment on each
	}
	if _, err := replicaRead(t, c, 0, 1, chunk, chunkSize); rpc.CodeOf(err) != rpc.DataLoss {
		t.Fatalf("read of a flipped replica: %v", err)
	}
	if !eventually(10*time.Second, func() bool {
		st := diskStats(t, rc, c.Nodes[0].Addr)
		return st.RepairFailures >= 2 && st.UnrepairedChunks == 1
	}) {
		t.Fatalf("no failed repair reported: %+v", diskStats(t, rc, c.Nodes[0].Addr))
	}
	for n := range c.Nodes {
		if _, err := replicaRead(t, c, n, 1, chunk, chunkSize); rpc.CodeOf(err) != rpc.DataLoss {
			t.Fatalf("%s serves a chunk no replica holds intact: %v", c.Nodes[n].Name, err)
		}
		if st := diskStats(t, rc, c.Nodes[n].Addr); st.RepairedChunks != 0 {
			t.Fatalf("%s repaired from a corrupt copy: %+v", c.Nodes[n].Name, st)
		}
	}
	if _, err := cl.Read(ctx, client.ReadIO{Chain: 1, Chunk: chunk, Length: chunkSize}, false); rpc.CodeOf(err) != rpc.DataLoss {
		t.Fatalf("client read of a chunk corrupt everywhere: %v", err)
	}

	// Rewriting the whole chunk (no old segment is read) heals it everywhere;
	// the pending repairs then find nothing to do and the report clears.
	if _, err := cl.Write(ctx, 1, chunk, 0, data, chunkSize); err != nil {
		t.Fatal(err)
	}
	for n := range c.Nodes {
		if got, err := replicaRead(t, c, n, 1, chunk, chunkSize); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s after the rewrite: %d bytes, %v", c.Nodes[n].Name, len(got), err)
		}
	}
	if !eventually(15*time.Second, func() bool {
		for n := range c.Nodes {
			if diskStats(t, rc, c.Nodes[n].Addr).UnrepairedChunks != 0 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the report did not clear after the rewrite: %+v", diskStats(t, rc, c.Nodes[0].Addr))
	}
	checkConverged(t, c)
}

// scrubCluster is three storaged serving one chain, with the scrub on.
type scrubCluster struct {
	servers []*storaged.Server
	addrs   []string
	dirs    []string
	rc      *rpc.Client
	routing *routing.Static
}

func startScrubCluster(t *testing.T) *scrubCluster {
	t.Helper()
	opts := rpc.Options{Token: "scrub-test"}
	sc := &scrubCluster{rc: rpc.NewClient(opts)}
	t.Cleanup(func() { sc.rc.Close() })
	info := &routing.Info{Version: 1, Nodes: map[routing.NodeID]routing.Node{}, Chains: map[routing.ChainID]*routing.Chain{}}
	chain := &routing.Chain{ID: 1, Version: 1}
	var ls []net.Listener
	for i := 0; i < 3; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		id := routing.NodeID(i + 1)
		sc.addrs = append(sc.addrs, l.Addr().String())
		sc.dirs = append(sc.dirs, t.TempDir())
		info.Nodes[id] = routing.Node{ID: id, Addr: l.Addr().String()}
		chain.Targets = append(chain.Targets, routing.Target{ID: routing.TargetID(100 + i), Node: id, Public: routing.Serving, Local: routing.UpToDate})
	}
	info.Chains[1] = chain
	sc.routing = routing.NewStatic(info)
	for i, l := range ls {
		srv, err := storaged.New(storaged.Config{Node: routing.NodeID(i + 1), Disks: []string{sc.dirs[i]},
			Targets: []storaged.TargetConfig{{ID: routing.TargetID(100 + i), Chain: 1}}, Routing: sc.routing, RPC: opts, NoSync: true,
			ScrubInterval: 100 * time.Millisecond, ScrubBytesPerSec: 64 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, rpc.ErrServerClosed) {
				t.Errorf("serve: %v", err)
			}
		}()
		t.Cleanup(func() { srv.Close() })
		sc.servers = append(sc.servers, srv)
	}
	return sc
}

// The scrub finds a corrupt chunk nobody reads and has it repaired.
func TestScrubRepairsUnreadCorruption(t *testing.T) {
	sc := startScrubCluster(t)
	cl := client.NewChunkIO(sc.routing, sc.rc, 5*time.Second)
	data := pattern(79, 1<<20) // a whole chunk: 16 segments
	chunk := layout.MakeChunkID(79, 3)
	if _, err := cl.Write(ctx, 1, chunk, 0, data, chunkSize); err != nil {
		t.Fatal(err)
	}
	const bad = 2 // the tail
	flipOnDisk(t, sc.dirs[bad], data, 15<<16+7)
	if !eventually(20*time.Second, func() bool { return diskStats(t, sc.rc, sc.addrs[bad]).RepairedChunks == 1 }) {
		t.Fatalf("the scrub did not get the chunk repaired: %+v", diskStats(t, sc.rc, sc.addrs[bad]))
	}
	api := storageapi.Client{RPC: sc.rc}
	resp, got, err := api.BatchRead(ctx, sc.addrs[bad], &storageapi.BatchReadReq{IOs: []storageapi.ReadIO{{
		Key: storageapi.Key{Chain: 1, ChainVer: 1, Chunk: chunk}, Length: chunkSize}}})
	if err == nil {
		err = resp.Results[0].Err()
	}
	if err != nil || !bytes.Equal(got[:resp.Results[0].Len], data) {
		t.Fatalf("after the scrub's repair the tail serves %v", err)
	}
	if st := diskStats(t, sc.rc, sc.addrs[bad]); st.ChecksumErrors == 0 || st.UnrepairedChunks != 0 {
		t.Fatalf("stats after the repair: %+v", st)
	}
}
