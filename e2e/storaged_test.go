package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

type proc struct {
	cmd  *exec.Cmd
	args []string
	log  string
}

func startProc(t *testing.T, bin, log string, args ...string) *proc {
	t.Helper()
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	p := &proc{cmd: cmd, args: args, log: log}
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *proc) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
	}
}

// freeAddr reserves an address for a process that may be restarted on it.
func freeAddr(t *testing.T) string {
	addr, err := cluster.ReservePort()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	for i := 0; i < 300; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}

// TestStoragedProcesses runs three `flyfs storaged` processes from one routing
// file, replicates through them, kills one with SIGKILL and restarts it on its
// data: its committed chunks are there, byte for byte.
func TestStoragedProcesses(t *testing.T) {
	bin := flyfsBinary(t)
	dir := t.TempDir()
	token := "e2e-token"
	info := &routing.Info{Version: 1, Nodes: map[routing.NodeID]routing.Node{}, Chains: map[routing.ChainID]*routing.Chain{}}
	chain := &routing.Chain{ID: 1, Version: 1}
	for i := 1; i <= 3; i++ {
		info.Nodes[routing.NodeID(i)] = routing.Node{ID: routing.NodeID(i), Addr: freeAddr(t)}
		chain.Targets = append(chain.Targets, routing.Target{ID: routing.TargetID(100 + i), Node: routing.NodeID(i), Public: routing.Serving})
	}
	info.Chains[1] = chain
	rf := filepath.Join(dir, "routing.json")
	b, _ := json.Marshal(info)
	if err := os.WriteFile(rf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	procs := make([]*proc, 3)
	start := func(i int) {
		n := info.Nodes[routing.NodeID(i+1)]
		procs[i] = startProc(t, bin, filepath.Join(dir, fmt.Sprintf("n%d.log", i+1)), "storaged",
			"--node", fmt.Sprint(i+1), "--listen", n.Addr, "--data", filepath.Join(dir, fmt.Sprintf("disk%d", i+1)),
			"--target", fmt.Sprintf("%d:1", 101+i), "--routing-file", rf, "--token", token)
		waitListening(t, n.Addr)
	}
	for i := range procs {
		start(i)
	}
	src := routing.NewStatic(info)
	rc := rpc.NewClient(rpc.Options{Token: token})
	defer rc.Close()
	cl := client.NewChunkIO(src, rc, 10*time.Second)
	ctx := context.Background()
	want := map[layout.ChunkID][]byte{}
	for i := uint64(0); i < 10; i++ {
		chunk := layout.MakeChunkID(42, i)
		want[chunk] = bytes.Repeat([]byte{byte(i + 1)}, 100_000+int(i))
		if _, err := cl.Write(ctx, 1, chunk, 0, want[chunk], 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	procs[1].kill()
	start(1)
	// Read every chunk from the restarted node alone.
	only := routing.NewStatic(info)
	only.Update(func(in *routing.Info) {
		for j := range in.Chains[1].Targets {
			if in.Chains[1].Targets[j].Node != 2 {
				in.Chains[1].Targets[j].Public = routing.Offline
			}
		}
		in.Chains[1].Version = 1
	})
	// The processes still see version 1 with all serving; the test client reads
	// from node 2 only by routing its reads there.
	cl2 := client.NewChunkIO(only, rc, 5*time.Second)
	for chunk, data := range want {
		got, err := cl2.Read(ctx, client.ReadIO{Chain: 1, Chunk: chunk, Length: 1 << 20}, false)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("restarted node serves chunk %v as %d bytes, %v", chunk, len(got), err)
		}
	}
	// A stranger without the token is refused.
	stranger := rpc.NewClient(rpc.Options{Token: "wrong"})
	defer stranger.Close()
	_, err := client.NewChunkIO(src, stranger, 200*time.Millisecond).Read(ctx, client.ReadIO{Chain: 1, Chunk: layout.MakeChunkID(42, 0), Length: 10}, false)
	if rpc.CodeOf(err) != rpc.Unauthenticated {
		t.Fatalf("a client with the wrong token: %v", err)
	}
}
