package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/metad"
	"github.com/flyfs/flyfs/metad/ns"
)

// TestCloneSharesChunksUntilWritten clones files through the cluster: the
// clone reads the source's bytes without a byte copied, writes to either
// side (in place, across chunks, appends, truncates and extensions) leave
// the other as it was, a clone of a written clone freezes again, and when
// every file is gone GC leaves no chunk on storage and fsck is clean.
func TestCloneSharesChunksUntilWritten(t *testing.T) {
	rig := startCloneRig(t, 10*time.Second)
	db, fs := rig.db, rig.fs
	ctx := context.Background()

	write := func(p string, data []byte, off int64, create bool) {
		t.Helper()
		var f *client.File
		var err error
		if create {
			f, err = fs.Create(ctx, p, 0o644)
		} else {
			f, err = fs.OpenFile(ctx, p, 1 /* O_WRONLY */, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(data, off); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(p string, want []byte) {
		t.Helper()
		f, err := fs.Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if f.Size() != uint64(len(want)) {
			t.Fatalf("%s: %d bytes, want %d", p, f.Size(), len(want))
		}
		got := make([]byte, len(want)+10)
		n, _ := f.ReadAt(got, 0)
		if n != len(want) || !bytes.Equal(got[:n], want) {
			i := 0
			for i < n && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Fatalf("%s: read %d bytes, first difference at %d", p, n, i)
		}
	}
	clone := func(from, to string) {
		t.Helper()
		in, err := fs.Stat(ctx, from)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Meta().Clone(ctx, in.ID, ns.RootID, to[1:], false, 0o644, client.Creds{}); err != nil {
			t.Fatal(err)
		}
	}

	r := rand.New(rand.NewPCG(1, 2))
	a := make([]byte, 5<<20+12345) // 6 chunks over a stripe of 4
	for i := range a {
		a[i] = byte(r.Uint32())
	}
	write("/a", a, 0, true)
	clone("/a", "/b")
	b := bytes.Clone(a)
	expect("/b", b)

	// The source changes: in place inside a chunk, and an append.
	patch := bytes.Repeat([]byte("A"), 100)
	write("/a", patch, 1<<20+10, false)
	copy(a[1<<20+10:], patch)
	more := bytes.Repeat([]byte("+"), 1<<20)
	write("/a", more, int64(len(a)), false)
	a = append(a, more...)
	expect("/a", a)
	expect("/b", b)

	// The clone changes across a chunk boundary.
	cross := []byte("0123456789")
	write("/b", cross, 3<<20-5, false)
	copy(b[3<<20-5:], cross)
	expect("/b", b)
	expect("/a", a)

	// Cut inside a chunk, then extend: zeros past the cut, not the layer.
	f, err := fs.OpenFile(ctx, "/b", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(ctx, 2<<20+7); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(ctx, 4<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b = append(b[:2<<20+7], make([]byte, 4<<20-(2<<20+7))...)
	expect("/b", b)

	// A clone of the written clone: its chunks freeze into a second layer.
	clone("/b", "/c")
	expect("/c", b)
	write("/c", []byte("c"), 0, false)
	expect("/b", b)
	in, _ := fs.Stat(ctx, "/c")
	if len(in.Layers) != 2 {
		t.Fatalf("/c reads through %v", in.Layers)
	}
	rep, err := ns.Check(ctx, db)
	if err != nil || !rep.Clean() {
		t.Fatalf("fsck: %v %s", err, rep.String())
	}

	for _, p := range []string{"/a", "/b", "/c"} {
		if err := fs.Remove(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	rig.waitNoChunks(t)
	rep, err = ns.Check(ctx, db)
	if err != nil || !rep.Clean() {
		t.Fatalf("fsck after GC: %v %s", err, rep.String())
	}
}

// TestCloneWritesThroughStorageFailures: a source and its clone are written
// at random places (first writes of shared chunks copy the layer at the
// head) while storage nodes are killed and restarted one after another, so
// copies run through head failovers and targets syncing back. Every write
// that returned is in its file, neither file sees the other's, the layer
// is unchanged, and after removal GC leaves no chunk and fsck is clean.
func TestCloneWritesThroughStorageFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts storage nodes for several seconds")
	}
	rig := startCloneRig(t, 30*time.Second)
	c, db, fs := rig.c, rig.db, rig.fs
	ctx := context.Background()

	r := rand.New(rand.NewPCG(5, 6))
	orig := make([]byte, 8<<20)
	for i := range orig {
		orig[i] = byte(r.Uint32())
	}
	f, err := fs.Create(ctx, "/src", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(orig, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	in, _ := fs.Stat(ctx, "/src")
	if _, err := fs.Meta().Clone(ctx, in.ID, ns.RootID, "clone", false, 0o644, client.Creds{}); err != nil {
		t.Fatal(err)
	}
	keep, err := fs.Meta().Clone(ctx, in.ID, ns.RootID, "keep", false, 0o644, client.Creds{}) // never written: the layer as it was
	if err != nil {
		t.Fatal(err)
	}
	_ = keep

	models := map[string][]byte{"/src": bytes.Clone(orig), "/clone": bytes.Clone(orig)}
	stop := make(chan struct{})
	errs := make(chan error, 2)
	for name, model := range models {
		go func(name string, model []byte, seed uint64) {
			r := rand.New(rand.NewPCG(seed, 7))
			fh, err := fs.OpenFile(ctx, name, 1 /* O_WRONLY */, 0)
			if err != nil {
				errs <- err
				return
			}
			for i := 0; ; i++ {
				select {
				case <-stop:
					if i < 20 {
						fh.Close()
						errs <- fmt.Errorf("%s: only %d writes during the failures", name, i)
						return
					}
					t.Logf("%s: %d writes", name, i)
					errs <- fh.Close()
					return
				default:
				}
				n := 1 + r.IntN(300<<10)
				off := r.IntN(len(model) - n)
				data := make([]byte, n)
				for j := range data {
					data[j] = byte(r.Uint32())
				}
				if _, err := fh.WriteAt(data, int64(off)); err != nil {
					fh.Close()
					errs <- fmt.Errorf("%s write %d at %d: %w", name, i, off, err)
					return
				}
				copy(model[off:], data)
			}
		}(name, model, uint64(len(name)))
	}
	for _, node := range []int{0, 1, 2} {
		time.Sleep(300 * time.Millisecond)
		c.Kill(node)
		time.Sleep(1500 * time.Millisecond)
		if err := c.Start(node); err != nil {
			t.Fatal(err)
		}
		c.WaitHealthy(30 * time.Second)
	}
	close(stop)
	for range models {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	check := func(p string, want []byte) {
		t.Helper()
		fh, err := fs.Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		got := make([]byte, len(want))
		if n, _ := fh.ReadAt(got, 0); n != len(want) || !bytes.Equal(got, want) {
			i := 0
			for i < n && got[i] == want[i] {
				i++
			}
			t.Fatalf("%s: %d bytes read, first difference at %d", p, n, i)
		}
	}
	for p, want := range models {
		check(p, want)
	}
	check("/keep", orig)
	rep, err := ns.Check(ctx, db)
	if err != nil || !rep.Clean() {
		t.Fatalf("fsck: %v %s", err, rep.String())
	}
	for _, p := range []string{"/src", "/clone", "/keep"} {
		if err := fs.Remove(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	rig.waitNoChunks(t)
}

// cloneRig is a three-node cluster with one metad on an in-memory store (GC
// without grace) and a client retrying for retryFor.
type cloneRig struct {
	c  *harness.Cluster
	db *kv.DB
	fs *client.FS
	rc *rpc.Client
}

func startCloneRig(t *testing.T, retryFor time.Duration) *cloneRig {
	t.Helper()
	c := harness.StartCluster(t, harness.ClusterConfig{Nodes: 3, Chains: 4, T: time.Second, NoSync: true})
	ctx := context.Background()
	rc := c.RPCClient("client")
	src, err := client.NewMgmtdSource(ctx, c.MgmtdAddrs(), rc, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	db := memkv.Open(kv.Options{})
	m, err := metad.New(metad.Config{KV: db, Routing: src, Storage: rc, GCInterval: 50 * time.Millisecond,
		Namespace: ns.Options{GCGrace: -1}, DefaultChunkSize: 1 << 20, DefaultStripe: 4})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go m.Serve(l)
	t.Cleanup(func() { m.Close() })
	fs := client.NewFS(src, rc, []string{l.Addr().String()}, client.NewChunkIO(src, rc, retryFor))
	return &cloneRig{c: c, db: db, fs: fs, rc: rc}
}

// waitNoChunks waits for GC to leave no chunk replica on any node.
func (r *cloneRig) waitNoChunks(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	api := storageapi.Client{RPC: r.rc}
	left := func() int {
		n := 0
		for _, node := range r.c.Nodes {
			for chain := uint32(1); chain <= 4; chain++ {
				resp, err := api.DumpChunkMeta(ctx, node.Addr, &storageapi.ChunkRange{Chain: chain, Begin: layout.ChunkID{}, End: layout.MakeChunkID(^uint64(0), 0)})
				if err == nil {
					n += len(resp.Metas)
				}
			}
		}
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for left() > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := left(); n != 0 {
		t.Fatalf("%d chunk replicas left after every file went", n)
	}
}
