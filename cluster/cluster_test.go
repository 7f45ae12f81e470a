package cluster

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
)

func quickConfig(dir string) Config {
	return Config{Dir: dir, NoSync: true, Nodes: 2, Replicas: 2, Chains: 2, Metads: 1,
		HeartbeatTimeout: time.Second, ScanInterval: 150 * time.Millisecond, GCGrace: -1}
}

func writeFile(t *testing.T, fs *client.FS, path string, data []byte) {
	t.Helper()
	ctx := context.Background()
	f, err := fs.Create(ctx, path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, fs *client.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, 0, int64(f.Size())))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A cluster keeps its id, its chains and its data across a stop of one
// storage node and across a restart of the whole cluster on its directory:
// what `flyfs server` does at every start. Also with the roles calling each
// other in-process (Config.Local, as flyfs server runs): the stopped node's
// server goes, and the restarted one takes the calls.
func TestRestartKeepsIDChainsAndData(t *testing.T) {
	for _, local := range []bool{false, true} {
		name := "tcp"
		if local {
			name = "local"
		}
		t.Run(name, func(t *testing.T) { restartKeepsIDChainsAndData(t, local) })
	}
}

func restartKeepsIDChainsAndData(t *testing.T, local bool) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := quickConfig(dir)
	cfg.Local = local
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	id, fresh := c.ID()
	if id == "" || !fresh {
		t.Fatalf("a new cluster: id %q fresh %v", id, fresh)
	}
	fs, err := c.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("flyfs"), 100_000)
	writeFile(t, fs, "/kept", data)

	c.StopNode(1)
	if c.Storage(1) != nil {
		t.Fatal("a stopped node still has a server")
	}
	if err := c.StartNode(1); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReadable(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs, "/kept"); !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes after a node restart, want %d", len(got), len(data))
	}
	info, err := c.Routing(ctx)
	if err != nil {
		t.Fatal(err)
	}
	chains := len(info.Chains)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c, err = Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if again, fresh := c.ID(); again != id || fresh {
		t.Fatalf("after a restart: id %q fresh %v, want %q and not fresh", again, fresh, id)
	}
	if info, _ := c.Routing(ctx); len(info.Chains) != chains {
		t.Fatalf("%d chains after a restart, want the %d made at first", len(info.Chains), chains)
	}
	fs, err = c.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs, "/kept"); !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes after a cluster restart, want %d", len(got), len(data))
	}
}

func TestConfigRefusals(t *testing.T) {
	ctx := context.Background()
	if _, err := Start(ctx, Config{}); err == nil {
		t.Error("a cluster without a directory started")
	}
	if _, err := Start(ctx, Config{Dir: t.TempDir(), Nodes: 1, Replicas: 2}); err == nil {
		t.Error("a cluster with more replicas than nodes started")
	}
}

// Storage disks remember their cluster: the same directory under another
// cluster's managers (a store of its own here) refuses to start.
func TestAnotherClustersDiskIsRefused(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, quickConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	other := quickConfig(dir)
	other.KV = memkv.Open(kv.Options{}) // another cluster: its own store, its own id
	_, err = Start(ctx, other)
	if err == nil || !strings.Contains(err.Error(), "belongs to cluster") {
		t.Fatalf("a disk of another cluster: %v", err)
	}
}

// Reads of whole chunk pieces fill the caller's buffer right, whether the
// storage service answers in that buffer (in-process, one replica: no
// hedge may race) or in one of its own: every byte of the file, and zeros
// where a chunk ends short or is missing, over a buffer full of junk.
func TestReadsFillTheCallersBuffer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		local    bool
		replicas int
	}{{"local-1", true, 1}, {"local-2", true, 2}, {"tcp-1", false, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cfg := quickConfig(t.TempDir())
			cfg.Local, cfg.Replicas, cfg.ChunkSize = tc.local, tc.replicas, 1<<20
			c, err := Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fs, err := c.FS(ctx)
			if err != nil {
				t.Fatal(err)
			}
			data := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/32) // a chunk and a half
			writeFile(t, fs, "/short", data)
			f, err := fs.OpenFile(ctx, "/short", os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(ctx, 4<<20); err != nil { // the rest of chunk 1, and chunks 2 and 3, are holes
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			want := append(bytes.Clone(data), make([]byte, 4<<20-len(data))...)
			r, err := fs.Open(ctx, "/short")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for _, piece := range []struct{ off, n int }{{0, 4 << 20}, {0, 1 << 20}, {1 << 20, 1 << 20}, {2 << 20, 1 << 20}, {512 << 10, 1 << 20}} {
				buf := bytes.Repeat([]byte{0xee}, piece.n)
				if n, err := r.ReadAtContext(ctx, buf, int64(piece.off)); err != nil || n != piece.n {
					t.Fatalf("read %d at %d: %d, %v", piece.n, piece.off, n, err)
				}
				if !bytes.Equal(buf, want[piece.off:piece.off+piece.n]) {
					i := 0
					for buf[i] == want[piece.off+i] {
						i++
					}
					t.Fatalf("read %d at %d: byte %d is %#x, want %#x", piece.n, piece.off, piece.off+i, buf[i], want[piece.off+i])
				}
			}
		})
	}
}
