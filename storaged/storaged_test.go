package storaged_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/e2e/harness"
)

const chunkSize = 1 << 20

var ctx = context.Background()

func pattern(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed*31+7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// replicaRead reads a chunk from one node directly.
func replicaRead(t *testing.T, c *harness.StorageCluster, node int, chain routing.ChainID, chunk layout.ChunkID, length uint32) ([]byte, error) {
	t.Helper()
	info := c.Routing.Current()
	ch, _ := info.Chain(chain)
	api := storageapi.Client{RPC: c.RPCClient("client")}
	resp, data, err := api.BatchRead(ctx, c.Nodes[node].Addr, &storageapi.BatchReadReq{IOs: []storageapi.ReadIO{
		{Key: storageapi.Key{Chain: uint32(chain), ChainVer: ch.Version, Chunk: chunk}, Offset: 0, Length: length}}})
	if err != nil {
		return nil, err
	}
	if err := resp.Results[0].Err(); err != nil {
		return nil, err
	}
	return data[:resp.Results[0].Len], nil
}

// servingNodes lists the node indexes of a chain's serving targets.
func servingNodes(c *harness.StorageCluster, chain routing.ChainID) []int {
	ch, _ := c.Routing.Current().Chain(chain)
	var out []int
	for _, t := range ch.Readable() {
		out = append(out, int(t.Node)-1)
	}
	return out
}

// checkConverged asserts every serving replica of every chain holds the same
// committed chunks (id, version, length, checksum) and nothing pending.
func checkConverged(t *testing.T, c *harness.StorageCluster) {
	t.Helper()
	api := storageapi.Client{RPC: c.RPCClient("client")}
	for id := range c.Routing.Current().Chains {
		var ref []storageapi.ChunkMeta
		for i, n := range servingNodes(c, id) {
			resp, err := api.DumpChunkMeta(ctx, c.Nodes[n].Addr, &storageapi.ChunkRange{Chain: uint32(id), Max: 100000})
			if err != nil {
				t.Fatalf("dump chain %d on %s: %v", id, c.Nodes[n].Name, err)
			}
			for _, m := range resp.Metas {
				if m.CommitVer != m.UpdateVer {
					t.Errorf("chain %d on %s: chunk %v still pending %d/%d", id, c.Nodes[n].Name, m.Chunk, m.CommitVer, m.UpdateVer)
				}
				m.ChainVer = 0 // replicas may have committed under different chain versions
			}
			for j := range resp.Metas {
				resp.Metas[j].ChainVer = 0
			}
			if i == 0 {
				ref = resp.Metas
				continue
			}
			if fmt.Sprint(ref) != fmt.Sprint(resp.Metas) {
				t.Errorf("chain %d: replicas differ:\n%v\n%v", id, ref, resp.Metas)
			}
		}
	}
}

func TestReplicationToEveryReplica(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 3, NoSync: true})
	cl := c.Client(10 * time.Second)
	for chain := routing.ChainID(1); chain <= 3; chain++ {
		for i := uint64(0); i < 5; i++ {
			chunk := layout.MakeChunkID(uint64(chain), i)
			data := pattern(uint64(chain)*100+i, 200_000+int(i)*1000)
			meta, err := cl.Write(ctx, chain, chunk, 0, data, chunkSize)
			if err != nil {
				t.Fatal(err)
			}
			if meta.CommitVer != 1 || meta.Len != uint32(len(data)) {
				t.Fatalf("meta after first write: %+v", meta)
			}
			for _, n := range servingNodes(c, chain) {
				got, err := replicaRead(t, c, n, chain, chunk, chunkSize)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("replica %s of chain %d: %d bytes, %v", c.Nodes[n].Name, chain, len(got), err)
				}
			}
		}
	}
	// A partial overwrite and an append reach every replica too.
	chunk := layout.MakeChunkID(1, 0)
	want := pattern(100, 200_000)
	patch := []byte("overwritten in the middle")
	copy(want[5000:], patch)
	if _, err := cl.Write(ctx, 1, chunk, 5000, patch, chunkSize); err != nil {
		t.Fatal(err)
	}
	tail := pattern(9, 70_000)
	want = append(want, tail...)
	if _, err := cl.Write(ctx, 1, chunk, 200_000, tail, chunkSize); err != nil {
		t.Fatal(err)
	}
	for _, n := range servingNodes(c, 1) {
		got, err := replicaRead(t, c, n, 1, chunk, chunkSize)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("replica %s after overwrite+append: %d bytes (want %d), %v", c.Nodes[n].Name, len(got), len(want), err)
		}
	}
	checkConverged(t, c)
}

func TestConcurrentWritersToOneChunkSerialise(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, NoSync: true})
	chunk := layout.MakeChunkID(7, 0)
	const writers, each = 6, 15
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cl := c.Client(10 * time.Second)
			for i := 0; i < each; i++ {
				// Each writer owns 4 KiB of the chunk and stamps it with its count.
				buf := bytes.Repeat([]byte{byte(w*16 + i)}, 4096)
				if _, err := cl.Write(ctx, 1, chunk, uint32(w*4096), buf, chunkSize); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	cl := c.Client(10 * time.Second)
	got, err := cl.Read(ctx, client.ReadIO{Chain: 1, Chunk: chunk, Length: chunkSize}, false)
	if err != nil {
		t.Fatal(err)
	}
	for w := 0; w < writers; w++ {
		if !bytes.Equal(got[w*4096:(w+1)*4096], bytes.Repeat([]byte{byte(w*16 + each - 1)}, 4096)) {
			t.Fatalf("writer %d's last write is not what the chunk holds", w)
		}
	}
	checkConverged(t, c)
	api := storageapi.Client{RPC: c.RPCClient("client")}
	resp, err := api.DumpChunkMeta(ctx, c.Nodes[0].Addr, &storageapi.ChunkRange{Chain: 1})
	if err != nil || len(resp.Metas) != 1 || resp.Metas[0].CommitVer != writers*each {
		t.Fatalf("every write must be one version: %+v %v", resp, err)
	}
}

// TestSuccessorKilledMidWrite kills the middle replica while writes stream,
// then publishes it failed as mgmtd would: every acknowledged write must be on
// every remaining replica; writes reported failed may or may not be.
func TestSuccessorKilledMidWrite(t *testing.T) {
	for _, victim := range []int{1, 2} { // the middle, then the tail of chain 1
		t.Run(fmt.Sprint("node", victim+1), func(t *testing.T) {
			c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, NoSync: true, ForwardTimeout: 10 * time.Second})
			var acked sync.Map
			var n atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					cl := c.Client(8 * time.Second)
					for i := uint64(0); ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						chunk := layout.MakeChunkID(uint64(w+1), i)
						data := pattern(uint64(w)<<32|i, 32<<10)
						if _, err := cl.Write(ctx, 1, chunk, 0, data, chunkSize); err == nil {
							acked.Store(chunk, data)
							n.Add(1)
						}
					}
				}(w)
			}
			time.Sleep(150 * time.Millisecond)
			c.Kill(victim)
			time.Sleep(300 * time.Millisecond) // writes stall at the dead successor...
			c.FailNode(victim)                 // ...until routing drops it
			time.Sleep(300 * time.Millisecond)
			close(stop)
			wg.Wait()
			if n.Load() == 0 {
				t.Fatal("no write was acknowledged")
			}
			lost := 0
			acked.Range(func(k, v any) bool {
				for _, node := range servingNodes(c, 1) {
					got, err := replicaRead(t, c, node, 1, k.(layout.ChunkID), chunkSize)
					if err != nil || !bytes.Equal(got, v.([]byte)) {
						lost++
						t.Errorf("acknowledged chunk %v on %s: %d bytes, %v", k, c.Nodes[node].Name, len(got), err)
					}
				}
				return lost < 5
			})
			checkConverged(t, c)
			t.Logf("%d writes acknowledged across the kill; none lost", n.Load())
		})
	}
}

func TestBadInput(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, NoSync: true})
	api := storageapi.Client{RPC: c.RPCClient("client")}
	head := c.Nodes[0].Addr
	chunk := layout.MakeChunkID(1, 1)
	sum := func(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }
	write := func(addr string, req storageapi.WriteReq, data []byte) error {
		if req.Key == (storageapi.Key{}) {
			req.Key = storageapi.Key{Chain: 1, ChainVer: 1, Chunk: chunk}
		}
		if req.ChunkSize == 0 {
			req.ChunkSize = 64 << 10
		}
		if req.Kind == 0 {
			req.Kind = storageapi.KindWrite
		}
		_, err := api.Write(ctx, addr, &req, data)
		return err
	}
	data := []byte("hello")
	cases := []struct {
		name string
		err  error
		want rpc.Code
	}{
		{"stale chain version", write(head, storageapi.WriteReq{Key: storageapi.Key{Chain: 1, ChainVer: 9, Chunk: chunk}, Checksum: sum(data)}, data), storageapi.CodeChainVersion},
		{"unknown chain", write(head, storageapi.WriteReq{Key: storageapi.Key{Chain: 77, ChainVer: 1, Chunk: chunk}, Checksum: sum(data)}, data), storageapi.CodeNoTarget},
		{"not the head", write(c.Nodes[1].Addr, storageapi.WriteReq{Checksum: sum(data)}, data), storageapi.CodeNotHead},
		{"write past the chunk size", write(head, storageapi.WriteReq{Offset: 64<<10 - 2, Checksum: sum(data)}, data), rpc.OutOfRange},
		{"write larger than the chunk", write(head, storageapi.WriteReq{Checksum: sum(make([]byte, 70000))}, make([]byte, 70000)), rpc.OutOfRange},
		{"payload checksum mismatch", write(head, storageapi.WriteReq{Checksum: 12345}, data), storageapi.CodeBadChecksum},
		{"unknown kind", write(head, storageapi.WriteReq{Kind: 99, Checksum: sum(data)}, data), rpc.InvalidArgument},
	}
	for _, tc := range cases {
		if rpc.CodeOf(tc.err) != tc.want {
			t.Errorf("%s: got %v (%v), want %v", tc.name, rpc.CodeOf(tc.err), tc.err, tc.want)
		}
	}
	if err := write(head, storageapi.WriteReq{Checksum: sum(data)}, data); err != nil {
		t.Fatal(err)
	}
	if err := write(head, storageapi.WriteReq{Checksum: sum(data), ChunkSize: 128 << 10}, data); rpc.CodeOf(err) != storageapi.CodeChunkSizeMismatch {
		t.Errorf("chunk size mismatch: %v", err)
	}
	_, err := c.Client(time.Second).Read(ctx, client.ReadIO{Chain: 1, Chunk: layout.MakeChunkID(1, 99), Length: 10}, false)
	if !errors.Is(err, client.ErrChunkNotFound) {
		t.Errorf("unknown chunk: %v", err)
	}
	got, err := c.Client(time.Second).Read(ctx, client.ReadIO{Chain: 1, Chunk: chunk, Offset: 100, Length: 10}, false)
	if err != nil || len(got) != 0 {
		t.Errorf("read past the end: %q %v", got, err)
	}
}

// --- linearizability ---

type regInput struct {
	write bool
	value uint64
}

var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[layout.ChunkID][]porcupine.Operation{}
		for _, op := range h {
			k := op.Metadata.(layout.ChunkID)
			by[k] = append(by[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range by {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return uint64(0) },
	Step: func(state, input, output any) (bool, any) {
		in := input.(regInput)
		if in.write {
			return true, in.value
		}
		return output.(uint64) == state.(uint64), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(regInput)
		if in.write {
			return fmt.Sprintf("write(%d)", in.value)
		}
		return fmt.Sprintf("read() -> %d", output)
	},
}

// TestLinearizableAcrossKills runs concurrent reads and writes of a few
// registers (8-byte chunks) while replicas are killed and dropped from their
// chains, and checks the history with porcupine.
func TestLinearizableAcrossKills(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 4, Chains: 2, Replicas: 3, NoSync: true, ForwardTimeout: 5 * time.Second})
	var mu sync.Mutex
	var history []porcupine.Operation
	record := func(op porcupine.Operation) {
		mu.Lock()
		history = append(history, op)
		mu.Unlock()
	}
	keys := []struct {
		chain routing.ChainID
		chunk layout.ChunkID
	}{{1, layout.MakeChunkID(1, 0)}, {1, layout.MakeChunkID(1, 1)}, {2, layout.MakeChunkID(2, 0)}}
	var counter atomic.Uint64
	deadline := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cl := c.Client(4 * time.Second)
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			for time.Now().Before(deadline) {
				k := keys[rng.IntN(len(keys))]
				call := time.Now().UnixNano()
				if rng.IntN(2) == 0 {
					v := counter.Add(1)
					var b [8]byte
					binary.BigEndian.PutUint64(b[:], v)
					_, err := cl.Write(ctx, k.chain, k.chunk, 0, b[:], 64<<10)
					ret := time.Now().UnixNano()
					if err != nil {
						ret = math.MaxInt64 // unknown outcome: it may take effect at any later time
					}
					record(porcupine.Operation{ClientId: w, Input: regInput{write: true, value: v}, Call: call, Return: ret, Metadata: k.chunk})
					continue
				}
				data, err := cl.Read(ctx, client.ReadIO{Chain: k.chain, Chunk: k.chunk, Length: 8}, false)
				ret := time.Now().UnixNano()
				var v uint64
				switch {
				case errors.Is(err, client.ErrChunkNotFound):
				case err != nil:
					continue // a failed read constrains nothing
				case len(data) == 8:
					v = binary.BigEndian.Uint64(data)
				default:
					t.Errorf("read %d bytes", len(data))
				}
				record(porcupine.Operation{ClientId: w, Input: regInput{}, Output: v, Call: call, Return: ret, Metadata: k.chunk})
			}
		}(w)
	}
	// Faults: kill a node of both chains, publish it failed; later another.
	time.Sleep(500 * time.Millisecond)
	c.Kill(1)
	time.Sleep(200 * time.Millisecond)
	c.FailNode(1)
	time.Sleep(500 * time.Millisecond)
	c.Kill(2)
	c.FailNode(2)
	wg.Wait()
	res, info := porcupine.CheckOperationsVerbose(registerModel, history, 30*time.Second)
	if res != porcupine.Ok {
		path := t.TempDir() + "/history.html"
		porcupine.VisualizePath(registerModel, info, path)
		t.Fatalf("history of %d operations is %s (visualisation: %s)", len(history), res, path)
	}
	t.Logf("%d operations, linearizable", len(history))
}

// TestRetryAfterHeadFailoverIsNotReapplied: a client's write commits, another
// client writes over it, the head dies before answering the first client, and
// the first client retries with the same tag at the new head: the retry must
// be answered from the dedup record, not applied again over the newer write.
func TestRetryAfterHeadFailoverIsNotReapplied(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, NoSync: true})
	api := storageapi.Client{RPC: c.RPCClient("client")}
	chunk := layout.MakeChunkID(3, 0)
	sum := func(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }
	first := []byte("AAAA")
	req := storageapi.WriteReq{Key: storageapi.Key{Chain: 1, ChainVer: 1, Chunk: chunk}, Kind: storageapi.KindWrite,
		ChunkSize: chunkSize, Checksum: sum(first), Tag: storageapi.Tag{Client: 77, Channel: 1, Seq: 1}}
	r1 := req
	if _, err := api.Write(ctx, c.Nodes[0].Addr, &r1, first); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client(time.Second).Write(ctx, 1, chunk, 0, []byte("BBBB"), chunkSize); err != nil {
		t.Fatal(err)
	}
	c.Kill(0)
	c.FailNode(0)
	retry := req
	retry.Key.ChainVer = c.Routing.Current().Chains[1].Version
	resp, err := api.Write(ctx, c.Nodes[1].Addr, &retry, first)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Meta.CommitVer != 1 {
		t.Fatalf("the retry was answered with version %d, not the first write's 1", resp.Meta.CommitVer)
	}
	got, err := c.Client(time.Second).Read(ctx, client.ReadIO{Chain: 1, Chunk: chunk, Length: 10}, false)
	if err != nil || string(got) != "BBBB" {
		t.Fatalf("after the retry the chunk holds %q (%v): the retry undid a newer write", got, err)
	}
}

// TestRetryOfAFailedWriteIsNotReapplied: a write the head applied but could
// not get down the chain fails back to its client; the head re-drives it, so
// readers see it; another client writes over it; the first client's retry,
// with the same tag, must be answered as done rather than applied again over
// the newer write (a reader would see the first value, the second, then the
// first again). A retry with nothing written since runs again, harmlessly.
func TestRetryOfAFailedWriteIsNotReapplied(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, NoSync: true, ForwardTimeout: 400 * time.Millisecond})
	api := storageapi.Client{RPC: c.RPCClient("client")}
	cl := c.Client(5 * time.Second)
	sum := func(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }
	failOnce := func(chunk layout.ChunkID, tag storageapi.Tag, data []byte) storageapi.WriteReq {
		t.Helper()
		req := storageapi.WriteReq{Key: storageapi.Key{Chain: 1, ChainVer: 1, Chunk: chunk}, Kind: storageapi.KindWrite,
			ChunkSize: chunkSize, Checksum: sum(data), Tag: tag}
		c.Net.Cut("n1", "n2")
		attempt := req
		if _, err := api.Write(ctx, c.Nodes[0].Addr, &attempt, data); rpc.CodeOf(err) != rpc.Unavailable {
			t.Fatalf("write across a cut link: %v", err)
		}
		c.Net.Heal("n1", "n2")
		return req
	}
	readTail := func(chunk layout.ChunkID) string {
		got, err := replicaRead(t, c, 2, 1, chunk, 100)
		if err != nil {
			return err.Error()
		}
		return string(got)
	}

	chunk := layout.MakeChunkID(6, 0)
	first := []byte("AAAA")
	req := failOnce(chunk, storageapi.Tag{Client: 78, Channel: 1, Seq: 1}, first)
	deadline := time.Now().Add(10 * time.Second)
	for readTail(chunk) != "AAAA" {
		if time.Now().After(deadline) {
			t.Fatalf("the head did not re-drive the failed write: the tail holds %q", readTail(chunk))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := cl.Write(ctx, 1, chunk, 0, []byte("BBBB"), chunkSize); err != nil {
		t.Fatal(err)
	}
	retry := req
	if _, err := api.Write(ctx, c.Nodes[0].Addr, &retry, first); err != nil {
		t.Fatalf("the retry of a write that took effect: %v", err)
	}
	if got := readTail(chunk); got != "BBBB" {
		t.Fatalf("after the retry the chunk holds %q: the retry undid a newer write", got)
	}

	// Retried at once, with nothing written in between: it runs again.
	other := layout.MakeChunkID(6, 1)
	req = failOnce(other, storageapi.Tag{Client: 78, Channel: 2, Seq: 1}, []byte("CCCC"))
	retry = req
	if _, err := api.Write(ctx, c.Nodes[0].Addr, &retry, []byte("CCCC")); err != nil {
		t.Fatalf("the retry of a failed write: %v", err)
	}
	if got := readTail(other); got != "CCCC" {
		t.Fatalf("after the retry the chunk holds %q", got)
	}
	checkConverged(t, c)
}

// TestTruncateRemoveAndQueryThroughTheChain: truncates and range removals
// travel the chain like writes; query-last-chunk describes an inode's chunks.
func TestTruncateRemoveAndQueryThroughTheChain(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, NoSync: true})
	cl := c.Client(5 * time.Second)
	const inode = 55
	for i := uint64(0); i < 4; i++ {
		if _, err := cl.Write(ctx, 1, layout.MakeChunkID(inode, i), 0, pattern(i, 10_000*int(i+1)), chunkSize); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.Write(ctx, 1, layout.MakeChunkID(inode+1, 0), 0, []byte("another file"), chunkSize); err != nil {
		t.Fatal(err)
	}
	// Cut chunk 3 to 100 bytes, extend chunk 0 with zeros to 15 000.
	if _, err := cl.Update(ctx, client.Update{Chain: 1, Chunk: layout.MakeChunkID(inode, 3), Kind: storageapi.KindTruncate, Length: 100, ChunkSize: chunkSize}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Update(ctx, client.Update{Chain: 1, Chunk: layout.MakeChunkID(inode, 0), Kind: storageapi.KindTruncate, Length: 15_000, ChunkSize: chunkSize}); err != nil {
		t.Fatal(err)
	}
	for _, n := range servingNodes(c, 1) {
		got, err := replicaRead(t, c, n, 1, layout.MakeChunkID(inode, 3), chunkSize)
		if err != nil || !bytes.Equal(got, pattern(3, 40_000)[:100]) {
			t.Fatalf("truncated chunk on %s: %d bytes, %v", c.Nodes[n].Name, len(got), err)
		}
		got, err = replicaRead(t, c, n, 1, layout.MakeChunkID(inode, 0), chunkSize)
		if err != nil || len(got) != 15_000 || !bytes.Equal(got[:10_000], pattern(0, 10_000)) || !bytes.Equal(got[10_000:], make([]byte, 5000)) {
			t.Fatalf("extended chunk on %s: %d bytes, %v", c.Nodes[n].Name, len(got), err)
		}
	}
	api := storageapi.Client{RPC: c.RPCClient("client")}
	begin, end := layout.InodeChunks(inode)
	q, err := api.QueryLastChunk(ctx, c.Nodes[1].Addr, &storageapi.ChunkRange{Chain: 1, ChainVer: 1, Begin: begin, End: end})
	if err != nil {
		t.Fatal(err)
	}
	if !q.Found || q.LastChunk != layout.MakeChunkID(inode, 3) || q.LastLen != 100 || q.Count != 4 || q.TotalLen != 15_000+20_000+30_000+100 {
		t.Fatalf("query last chunk: %+v", q)
	}
	// Remove the inode's chunks, two per call, through the head.
	removed := 0
	for {
		r, err := api.RemoveChunks(ctx, c.Nodes[0].Addr, &storageapi.ChunkRange{Chain: 1, ChainVer: 1, Begin: begin, End: end, Max: 2})
		if err != nil {
			t.Fatal(err)
		}
		removed += int(r.Removed)
		if !r.More {
			break
		}
	}
	if removed != 4 {
		t.Fatalf("removed %d chunks, want 4", removed)
	}
	for _, n := range servingNodes(c, 1) {
		if _, err := replicaRead(t, c, n, 1, layout.MakeChunkID(inode, 1), 10); rpc.CodeOf(err) != rpc.NotFound {
			t.Fatalf("removed chunk on %s: %v", c.Nodes[n].Name, err)
		}
		if got, err := replicaRead(t, c, n, 1, layout.MakeChunkID(inode+1, 0), 100); err != nil || string(got) != "another file" {
			t.Fatalf("the other file's chunk on %s: %q %v", c.Nodes[n].Name, got, err)
		}
	}
	checkConverged(t, c)
}

// TestForwardUnderNewVersionIsApplied: a hop downstream of the head that
// already committed a client's update must still apply the same update when
// the head forwards it again under a newer version (the head re-runs an update
// whose earlier attempt failed above this hop). Answering it from the client
// tag's record would acknowledge a version the hop never applied, and leave the
// head committed ahead of its successors.
func TestForwardUnderNewVersionIsApplied(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, NoSync: true})
	api := storageapi.Client{RPC: c.RPCClient("node1")}
	chunk := layout.MakeChunkID(4, 0)
	sum := func(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }
	tag := storageapi.Tag{Client: 91, Channel: 1, Seq: 1}
	mid := c.Nodes[1].Addr
	first := []byte("AAAA")
	resp, err := api.Write(ctx, mid, &storageapi.WriteReq{Key: storageapi.Key{Chain: 1, ChainVer: 1, Chunk: chunk},
		Kind: storageapi.KindWrite, ChunkSize: chunkSize, Checksum: sum(first), Tag: tag, Forwarded: true, UpdateVer: 1}, first)
	if err != nil || resp.Meta.CommitVer != 1 {
		t.Fatalf("first forward: %v %+v", err, resp)
	}
	again := []byte("CCCC")
	resp, err = api.Write(ctx, mid, &storageapi.WriteReq{Key: storageapi.Key{Chain: 1, ChainVer: 1, Chunk: chunk},
		Kind: storageapi.KindReplace, ChunkSize: chunkSize, Checksum: sum(again), Tag: tag, Forwarded: true, UpdateVer: 2}, again)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Meta.CommitVer != 2 {
		t.Fatalf("the forward of version 2 was answered with version %d: the hop did not apply it", resp.Meta.CommitVer)
	}
	for _, node := range []int{1, 2} {
		got, err := replicaRead(t, c, node, 1, chunk, 4)
		if err != nil || string(got) != "CCCC" {
			t.Fatalf("node %d holds %q (%v), want CCCC", node, got, err)
		}
	}
}

// TestIOCountersCountClientIOOnce: a node counts the client reads it served
// and the updates that entered their chain at it, so the cluster's sum counts
// each client byte once, not once per replica.
func TestIOCountersCountClientIOOnce(t *testing.T) {
	c := harness.StartStorage(t, harness.StorageConfig{Nodes: 3, Chains: 1, NoSync: true})
	cl := c.Client(5 * time.Second)
	chunk := layout.MakeChunkID(5, 0)
	data := pattern(5, 1000)
	if _, err := cl.Write(ctx, 1, chunk, 0, data, chunkSize); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if got, err := cl.Read(ctx, client.ReadIO{Chain: 1, Chunk: chunk, Length: 1000}, false); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read %d: %d bytes, %v", i, len(got), err)
		}
	}
	api := storageapi.Client{RPC: c.RPCClient("stats")}
	var sum storageapi.IOCounters
	for _, n := range c.Nodes {
		st, err := api.Stats(ctx, n.Addr)
		if err != nil {
			t.Fatal(err)
		}
		// Every counted operation is in its latency histogram once.
		if len(st.ReadLatency) != storageapi.LatencySlots || len(st.WriteLatency) != storageapi.LatencySlots {
			t.Fatalf("node %d: latency histograms of %d and %d buckets", st.Node, len(st.ReadLatency), len(st.WriteLatency))
		}
		var reads, writes uint64
		for i := range st.ReadLatency {
			reads += st.ReadLatency[i]
			writes += st.WriteLatency[i]
		}
		if reads != st.IO.ReadOps || writes != st.IO.WriteOps {
			t.Fatalf("node %d: %d reads and %d writes in the histograms, %+v counted", st.Node, reads, writes, st.IO)
		}
		sum.ReadOps += st.IO.ReadOps
		sum.ReadBytes += st.IO.ReadBytes
		sum.WriteOps += st.IO.WriteOps
		sum.WriteBytes += st.IO.WriteBytes
	}
	// A hedged read may be served twice; a write enters its chain once.
	if sum.ReadOps < 3 || sum.ReadBytes != 1000*sum.ReadOps || sum.WriteOps != 1 || sum.WriteBytes != 1000 {
		t.Fatalf("cluster counters %+v, want 3 (or more) reads of 1000 bytes and 1 write of 1000", sum)
	}
}
