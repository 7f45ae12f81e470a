package storaged_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/e2e/harness"
)

// targetsOf lists the public states of node's targets.
func nodeStates(in *routing.Info, node routing.NodeID) []routing.PublicState {
	var out []routing.PublicState
	for id := routing.ChainID(1); int(id) <= len(in.Chains); id++ {
		if ch, ok := in.Chains[id]; ok {
			for _, t := range ch.Targets {
				if t.Node == node {
					out = append(out, t.Public)
				}
			}
		}
	}
	return out
}

func allAre(states []routing.PublicState, want ...routing.PublicState) bool {
	if len(states) == 0 {
		return false
	}
	for _, s := range states {
		ok := false
		for _, w := range want {
			ok = ok || s == w
		}
		if !ok {
			return false
		}
	}
	return true
}

// convergedManaged checks every serving replica of every chain holds
// byte-identical committed chunks (ids, versions, lengths, checksums).
func convergedManaged(t *testing.T, c *harness.Cluster) {
	t.Helper()
	info := c.Routing()
	api := storageapi.Client{RPC: c.RPCClient("checker")}
	for id, ch := range info.Chains {
		var ref string
		for i, tg := range ch.Readable() {
			addr, _ := info.Addr(tg.Node)
			resp, err := api.DumpChunkMeta(ctx, addr, &storageapi.ChunkRange{Chain: uint32(id), Max: 1 << 20})
			if err != nil {
				t.Fatalf("dump chain %d on node %d: %v", id, tg.Node, err)
			}
			s := ""
			for _, m := range resp.Metas {
				if m.CommitVer != m.UpdateVer {
					t.Errorf("chain %d node %d: chunk %v pending", id, tg.Node, m.Chunk)
				}
				s += fmt.Sprintf("%v:%d:%d:%x ", m.Chunk, m.CommitVer, m.Len, m.Checksum)
			}
			if i == 0 {
				ref = s
			} else if s != ref {
				t.Errorf("chain %d: replica on node %d differs from the head's:\n%s\n%s", id, tg.Node, ref, s)
			}
		}
	}
}

// readFrom reads a chunk from one node directly, retrying while that node's
// routing catches up (as a client does on ChainVersionMismatch).
func readFrom(t *testing.T, c *harness.Cluster, node int, chain routing.ChainID, chunk layout.ChunkID, n uint32) ([]byte, error) {
	t.Helper()
	api := storageapi.Client{RPC: c.RPCClient("client")}
	var err error
	for try := 0; try < 50; try++ {
		info := c.Routing()
		var resp *storageapi.BatchReadResp
		var data []byte
		resp, data, err = api.BatchRead(ctx, c.Nodes[node].Addr, &storageapi.BatchReadReq{IOs: []storageapi.ReadIO{
			{Key: storageapi.Key{Chain: uint32(chain), ChainVer: info.Chains[chain].Version, Chunk: chunk}, Length: n}}})
		if err == nil {
			if err = resp.Results[0].Err(); err == nil {
				return data, nil
			}
		}
		if rpc.CodeOf(err) != storageapi.CodeChainVersion {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, err
}

// workload writes registers and reads them back from several clients,
// recording a porcupine history and every acknowledged write's content.
type workload struct {
	c       *harness.Cluster
	mu      sync.Mutex
	history []porcupine.Operation
	counter atomic.Uint64
	maxGap  atomic.Int64 // longest time a reader went without a successful read
	stop    chan struct{}
	wg      sync.WaitGroup
}

func startWorkload(t *testing.T, c *harness.Cluster, clients int) *workload {
	w := &workload{c: c, stop: make(chan struct{})}
	for g := 0; g < clients; g++ {
		w.wg.Add(1)
		go func(g int) {
			defer w.wg.Done()
			cl := c.Client(3 * time.Second)
			rng := rand.New(rand.NewPCG(uint64(g), 5))
			lastRead := time.Now()
			for {
				select {
				case <-w.stop:
					return
				default:
				}
				chain := routing.ChainID(1 + rng.IntN(2))
				chunk := layout.MakeChunkID(uint64(chain), uint64(rng.IntN(3)))
				call := time.Now().UnixNano()
				if rng.IntN(2) == 0 {
					v := w.counter.Add(1)
					var b [8]byte
					binary.BigEndian.PutUint64(b[:], v)
					_, err := cl.Write(ctx, chain, chunk, 0, b[:], 64<<10)
					ret := time.Now().UnixNano()
					if err != nil {
						ret = math.MaxInt64
					}
					w.record(porcupine.Operation{ClientId: g, Input: regInput{write: true, value: v}, Call: call, Return: ret, Metadata: chunk})
					continue
				}
				data, err := cl.Read(ctx, client.ReadIO{Chain: chain, Chunk: chunk, Length: 8}, false)
				ret := time.Now().UnixNano()
				var v uint64
				switch {
				case errors.Is(err, client.ErrChunkNotFound):
				case err != nil:
					continue
				case len(data) == 8:
					v = binary.BigEndian.Uint64(data)
				}
				if gap := time.Since(lastRead); gap > time.Duration(w.maxGap.Load()) {
					w.maxGap.Store(int64(gap))
				}
				lastRead = time.Now()
				w.record(porcupine.Operation{ClientId: g, Input: regInput{}, Output: v, Call: call, Return: ret, Metadata: chunk})
			}
		}(g)
	}
	return w
}

func (w *workload) record(op porcupine.Operation) {
	w.mu.Lock()
	w.history = append(w.history, op)
	w.mu.Unlock()
}

func (w *workload) finish(t *testing.T) {
	t.Helper()
	close(w.stop)
	w.wg.Wait()
	res, info := porcupine.CheckOperationsVerbose(registerModel, w.history, 60*time.Second)
	if res != porcupine.Ok {
		// Kept past the test (t.TempDir is not): the evidence of a rare failure.
		dir, _ := os.MkdirTemp("", "flyfs-history-")
		path := dir + "/history.html"
		porcupine.VisualizePath(registerModel, info, path)
		dumpHistory(dir+"/history.txt", w.history)
		t.Fatalf("history of %d operations is %s (%s)", len(w.history), res, path)
	}
	t.Logf("%d operations linearizable; longest a reader went without a successful read: %v", len(w.history), time.Duration(w.maxGap.Load()))
}

// TestKillRecoverUnderLoad: a storaged of two 3-replica chains is killed under
// a read/write load; its chains drop to two replicas; it restarts, is synced,
// and serves again; every replica ends byte-identical; the history is
// linearizable; readers never stall much longer than failure detection.
func TestKillRecoverUnderLoad(t *testing.T) {
	const T = time.Second
	c := harness.StartCluster(t, harness.ClusterConfig{Nodes: 3, Chains: 2, T: T, NoSync: true})
	// Bulk data that recovery must copy.
	cl := c.Client(5 * time.Second)
	bulk := map[layout.ChunkID][]byte{}
	for i := uint64(0); i < 20; i++ {
		chunk := layout.MakeChunkID(1000, i)
		bulk[chunk] = pattern(i, 100_000)
		if _, err := cl.Write(ctx, 1, chunk, 0, bulk[chunk], chunkSize); err != nil {
			t.Fatal(err)
		}
	}
	w := startWorkload(t, c, 4)
	time.Sleep(300 * time.Millisecond)
	c.Kill(1) // node 2: middle of chain 1, head of chain 2
	c.WaitFor(10*T, "node 2's targets published offline", func(in *routing.Info) bool {
		return allAre(nodeStates(in, 2), routing.Offline)
	})
	time.Sleep(300 * time.Millisecond)
	// Writes made while node 2 was down.
	for i := uint64(20); i < 30; i++ {
		chunk := layout.MakeChunkID(1000, i)
		bulk[chunk] = pattern(i, 50_000)
		if _, err := cl.Write(ctx, 1, chunk, 0, bulk[chunk], chunkSize); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Start(1); err != nil {
		t.Fatal(err)
	}
	c.WaitHealthy(30 * T)
	time.Sleep(200 * time.Millisecond)
	w.finish(t)
	if gap := time.Duration(w.maxGap.Load()); gap > 10*T {
		t.Errorf("a reader went %v without a successful read; failure detection takes about %v", gap, T)
	}
	convergedManaged(t, c)
	info := c.Routing()
	for chunk, data := range bulk {
		for _, tg := range info.Chains[1].Readable() {
			addr, _ := info.Addr(tg.Node)
			api := storageapi.Client{RPC: c.RPCClient("checker")}
			resp, got, err := api.BatchRead(ctx, addr, &storageapi.BatchReadReq{IOs: []storageapi.ReadIO{{Key: storageapi.Key{Chain: 1, ChainVer: info.Chains[1].Version, Chunk: chunk}, Length: chunkSize}}})
			if err != nil || resp.Results[0].Err() != nil || !bytes.Equal(got, data) {
				t.Fatalf("chunk %v on node %d after recovery: %d bytes, %v %v", chunk, tg.Node, len(got), err, resp)
			}
		}
	}
}

// TestLastServingReplicaReturnsFirst: replicas fail one after another until
// the last one is lastsrv; it comes back first and serves at once; the others
// then sync from it.
func TestLastServingReplicaReturnsFirst(t *testing.T) {
	const T = time.Second
	c := harness.StartCluster(t, harness.ClusterConfig{Nodes: 3, Chains: 1, T: T, NoSync: true})
	cl := c.Client(5 * time.Second)
	chunk := layout.MakeChunkID(1, 0)
	if _, err := cl.Write(ctx, 1, chunk, 0, []byte("three replicas"), chunkSize); err != nil {
		t.Fatal(err)
	}
	c.Kill(2)
	c.Kill(1)
	c.WaitFor(10*T, "nodes 2 and 3 offline", func(in *routing.Info) bool {
		return allAre(nodeStates(in, 2), routing.Offline) && allAre(nodeStates(in, 3), routing.Offline)
	})
	if _, err := cl.Write(ctx, 1, chunk, 0, []byte("only on node 1"), chunkSize); err != nil {
		t.Fatal(err)
	}
	c.Kill(0)
	c.WaitFor(10*T, "node 1 lastsrv", func(in *routing.Info) bool { return allAre(nodeStates(in, 1), routing.LastSrv) })
	if err := c.Start(0); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(10*T, "node 1 serving again", func(in *routing.Info) bool { return allAre(nodeStates(in, 1), routing.Serving) })
	got, err := cl.Read(ctx, client.ReadIO{Chain: 1, Chunk: chunk, Length: 100}, false)
	if err != nil || string(got) != "only on node 1" {
		t.Fatalf("the returned lastsrv replica serves %q, %v", got, err)
	}
	c.Start(1)
	c.Start(2)
	c.WaitHealthy(30 * T)
	convergedManaged(t, c)
	for i := range c.Nodes {
		data, err := readFrom(t, c, i, 1, chunk, 100)
		if err != nil || string(data) != "only on node 1" {
			t.Fatalf("node %d after sync: %q %v", i+1, data, err)
		}
	}
}

// TestCutOffFromMgmtd: a storaged cut off from the cluster manager (but not
// from clients) stops serving within T/2, is published offline, and rejoins
// through recovery once the link heals. No client reads stale data from it.
func TestCutOffFromMgmtd(t *testing.T) {
	const T = time.Second
	c := harness.StartCluster(t, harness.ClusterConfig{Nodes: 3, Chains: 1, T: T, NoSync: true})
	cl := c.Client(5 * time.Second)
	chunk := layout.MakeChunkID(1, 0)
	if _, err := cl.Write(ctx, 1, chunk, 0, []byte("v1"), chunkSize); err != nil {
		t.Fatal(err)
	}
	direct := func() ([]byte, error) { return readFrom(t, c, 2, 1, chunk, 10) }
	c.Net.Cut("n3", "m1")
	cut := time.Now()
	for time.Since(cut) < 4*T {
		if _, err := direct(); rpc.CodeOf(err) == storageapi.CodeTargetNotServing {
			break
		}
		time.Sleep(T / 20)
	}
	fenced := time.Since(cut)
	if _, err := direct(); rpc.CodeOf(err) != storageapi.CodeTargetNotServing {
		t.Fatalf("node 3 still serves %v after being cut off from mgmtd: %v", fenced, err)
	}
	t.Logf("node 3 stopped serving %v after the cut (T/2 = %v)", fenced, T/2)
	c.WaitFor(10*T, "node 3 published offline", func(in *routing.Info) bool { return allAre(nodeStates(in, 3), routing.Offline) })
	if _, err := cl.Write(ctx, 1, chunk, 0, []byte("v2"), chunkSize); err != nil {
		t.Fatal(err)
	}
	if data, err := direct(); err == nil {
		t.Fatalf("the cut-off node served %q after the chain moved on", data)
	}
	c.Net.Heal("n3", "m1")
	c.WaitHealthy(30 * T)
	if data, err := direct(); err != nil || string(data) != "v2" {
		t.Fatalf("after healing, node 3 serves %q, %v", data, err)
	}
	convergedManaged(t, c)
}

// TestPrimaryMgmtdFailover: the primary mgmtd dies; another takes over and
// handles a storage failure after that.
func TestPrimaryMgmtdFailover(t *testing.T) {
	const T = time.Second
	c := harness.StartCluster(t, harness.ClusterConfig{Mgmtds: 2, Nodes: 3, Chains: 1, T: T, NoSync: true})
	primary := -1
	for i := range c.Mgmtds {
		if s := c.Mgmtd(i); s != nil && s.IsPrimary() {
			primary = i
		}
	}
	if primary < 0 {
		t.Fatal("no primary mgmtd")
	}
	c.KillMgmtd(primary)
	other := 1 - primary
	deadline := time.Now().Add(10 * T)
	for !c.Mgmtd(other).IsPrimary() && time.Now().Before(deadline) {
		time.Sleep(T / 10)
	}
	if !c.Mgmtd(other).IsPrimary() {
		t.Fatal("no mgmtd took over")
	}
	cl := c.Client(5 * time.Second)
	chunk := layout.MakeChunkID(1, 0)
	if _, err := cl.Write(ctx, 1, chunk, 0, []byte("after takeover"), chunkSize); err != nil {
		t.Fatal(err)
	}
	c.Kill(1)
	c.WaitFor(20*T, "node 2 offline under the new primary", func(in *routing.Info) bool { return allAre(nodeStates(in, 2), routing.Offline) })
	if _, err := cl.Write(ctx, 1, chunk, 0, []byte("two replicas!!"), chunkSize); err != nil {
		t.Fatal(err)
	}
	got, err := cl.Read(ctx, client.ReadIO{Chain: 1, Chunk: chunk, Length: 100}, false)
	if err != nil || string(got) != "two replicas!!" {
		t.Fatalf("read %q %v", got, err)
	}
}

// TestChainTableFollowsChains: mgmtd publishes the default chain table and
// appends a version when chains are added, leaving older versions alone.
func TestChainTableFollowsChains(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterConfig{Nodes: 3, Chains: 2, T: time.Second, NoSync: true})
	info := c.Routing()
	if chains, v, ok := info.LatestTable(routing.DefaultTable); !ok || v != 1 || fmt.Sprint(chains) != "[1 2]" {
		t.Fatalf("default table: %v v%d %v", chains, v, ok)
	}
	admin := client.NewMgmtd(c.RPCClient("admin"), c.MgmtdAddrs())
	three := routing.Chain{ID: 3, Targets: []routing.Target{{ID: 301, Node: 3}, {ID: 302, Node: 1}, {ID: 303, Node: 2}}}
	if _, err := admin.SetChains(ctx, &mgmtdapi.SetChainsReq{Chains: []routing.Chain{three}}); err != nil {
		t.Fatal(err)
	}
	info = c.WaitFor(10*time.Second, "table version 2", func(in *routing.Info) bool { _, v, _ := in.LatestTable(routing.DefaultTable); return v == 2 })
	v1, _ := info.Table(routing.DefaultTable, 1)
	v2, _ := info.Table(routing.DefaultTable, 2)
	if fmt.Sprint(v1) != "[1 2]" || fmt.Sprint(v2) != "[1 2 3]" {
		t.Fatalf("table versions: %v then %v", v1, v2)
	}
}

// TestClientCutOffFromHeadWritesThroughRelay: a client that cannot reach a
// chain's head (which mgmtd and the chain still reach, so routing keeps it)
// writes through another replica, which relays to the head. Every replica
// commits the update once, and the client's later writes go the same way
// while the link stays cut, and straight to the head once it heals.
func TestClientCutOffFromHeadWritesThroughRelay(t *testing.T) {
	const T = time.Second
	c := harness.StartCluster(t, harness.ClusterConfig{Nodes: 3, Chains: 1, T: T, NoSync: true})
	cl := c.Client(10 * time.Second)
	chunk := layout.MakeChunkID(1, 0)
	if _, err := cl.Write(ctx, 1, chunk, 0, []byte("v1"), chunkSize); err != nil {
		t.Fatal(err)
	}
	head, _ := c.Routing().Chains[1].Head()
	var headName string
	for _, n := range c.Nodes {
		if n.ID == head.Node {
			headName = n.Name
		}
	}
	c.Net.Cut("client", headName)
	for i, v := range []string{"v2", "v3"} {
		meta, err := cl.Write(ctx, 1, chunk, 0, []byte(v), chunkSize)
		if err != nil {
			t.Fatalf("write %q with the head (%s) cut off from the client: %v", v, headName, err)
		}
		if meta.CommitVer != uint32(i+2) {
			t.Fatalf("write %q committed version %d, want %d (applied once)", v, meta.CommitVer, i+2)
		}
	}
	if got := cl.Stats().Relayed; got != 2 {
		t.Fatalf("%d updates relayed, want 2", got)
	}
	if h, _ := c.Routing().Chains[1].Head(); h.ID != head.ID {
		t.Fatalf("the head moved to target %d: the test cut no client-head link that routing keeps", h.ID)
	}
	c.Net.Heal("client", headName)
	for i := range c.Nodes {
		if data, err := readFrom(t, c, i, 1, chunk, 10); err != nil || string(data) != "v3" {
			t.Fatalf("node %d serves %q, %v", i+1, data, err)
		}
	}
	convergedManaged(t, c)
}

// TestRelayRefusesForwards: only a client's update is relayed; a forward or a
// resync marked for relay is refused at once, and a relay at the head itself
// is simply the head's own update.
func TestRelayRefusesForwards(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterConfig{Nodes: 3, Chains: 1, T: time.Second, NoSync: true})
	info := c.Routing()
	ch := info.Chains[1]
	head, _ := ch.Head()
	succ, _ := ch.Successor(head.ID)
	api := storageapi.Client{RPC: c.RPCClient("client")}
	data := []byte("relayed")
	req := storageapi.WriteReq{Key: storageapi.Key{Chain: 1, ChainVer: ch.Version, Chunk: layout.MakeChunkID(1, 7)},
		Kind: storageapi.KindWrite, ChunkSize: chunkSize, Checksum: crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)), Relay: true}
	succAddr, _ := info.Addr(succ.Node)
	for _, bad := range []func(*storageapi.WriteReq){
		func(r *storageapi.WriteReq) { r.Forwarded, r.UpdateVer = true, 1 },
		func(r *storageapi.WriteReq) { r.Resync, r.CommitVer, r.UpdateVer = true, 1, 1 },
	} {
		r := req
		bad(&r)
		if _, err := api.Write(ctx, succAddr, &r, data); rpc.CodeOf(err) != rpc.InvalidArgument {
			t.Fatalf("relay of %+v: %v, want InvalidArgument", r, err)
		}
	}
	headAddr, _ := info.Addr(head.Node)
	resp, err := api.Write(ctx, headAddr, &req, data)
	if err != nil || resp.Meta.CommitVer != 1 {
		t.Fatalf("a relay at the head: %+v, %v", resp, err)
	}
}

// TestSilentHeadIsProbed: a head whose link to the client goes silent (it
// takes the request but nothing comes back, as across a blackhole) is
// probed one second into the write; the probe goes unanswered too, so the
// attempt ends there, well before AttemptTimeout, and the write is relayed.
func TestSilentHeadIsProbed(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterConfig{Nodes: 3, Chains: 1, T: time.Second, NoSync: true})
	// The client's connections to the head carry the delay hook from their
	// dial: raising the delay later then closes none of them, so the write
	// meets a silent head rather than a closed connection (which fails
	// fast and relays without a probe).
	head, _ := c.Routing().Chains[1].Head()
	headName := c.Nodes[int(head.Node)-1].Name
	c.Net.Delay("client", headName, time.Nanosecond)
	defer c.Net.Delay("client", headName, 0)
	cl := c.Client(30 * time.Second)
	chunk := layout.MakeChunkID(1, 0)
	if _, err := cl.Write(ctx, 1, chunk, 0, []byte("v1"), chunkSize); err != nil {
		t.Fatal(err)
	}
	// A shorter attempt timeout keeps the test short: the delayed request
	// still outlives it, and the probe must end the attempt before it.
	defer func(d time.Duration) { client.AttemptTimeout = d }(client.AttemptTimeout)
	client.AttemptTimeout = 5 * time.Second
	c.Net.Delay("client", headName, 6*time.Second)
	meta, err := cl.Write(ctx, 1, chunk, 0, []byte("v2"), chunkSize)
	if err != nil || meta.CommitVer != 2 {
		t.Fatalf("write with the head silent: %+v, %v", meta, err)
	}
	st := cl.Stats()
	if st.Unanswered != 1 || st.Relayed != 1 {
		t.Fatalf("%d attempts ended by an unanswered probe, %d relayed; want 1 and 1 (without the probe the attempt waits out AttemptTimeout)", st.Unanswered, st.Relayed)
	}
}

// dumpHistory writes one line per operation, for tools other than the
// visualisation.
func dumpHistory(path string, h []porcupine.Operation) {
	var b bytes.Buffer
	for _, op := range h {
		in := op.Input.(regInput)
		fmt.Fprintf(&b, "c%d %v write=%v val=%d out=%v call=%d ret=%d\n", op.ClientId, op.Metadata, in.write, in.value, op.Output, op.Call, op.Return)
	}
	os.WriteFile(path, b.Bytes(), 0o644)
}
