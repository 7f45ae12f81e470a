package e2e

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/rpc"
)

// TestMetadProcess: a `flyfs metad` process on the embedded engine keeps the
// namespace across a SIGKILL and restart, and answers errnos over the wire.
func TestMetadProcess(t *testing.T) {
	bin := flyfsBinary(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	start := func() *proc {
		p := startProc(t, bin, filepath.Join(dir, "metad.log"), "metad", "--listen", addr, "--data", dir, "--token", "tk")
		waitListening(t, addr)
		return p
	}
	p := start()
	rc := rpc.NewClient(rpc.Options{Token: "tk"})
	defer rc.Close()
	m := metaapi.Client{RPC: rc, Addr: addr}
	ctx := context.Background()
	d, err := m.Mkdir(ctx, &metaapi.MkdirReq{ReqID: metaapi.RequestID{1}, Parent: 1, Name: "datasets", Mode: 0o755})
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Create(ctx, &metaapi.CreateReq{ReqID: metaapi.RequestID{2}, Parent: d.Inode.ID, Name: "part-0", Mode: 0o644, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	p.kill()
	start()
	got, err := m.Resolve(ctx, &metaapi.ResolveReq{Path: "/datasets/part-0"})
	if err != nil || got.Inode.ID != f.Inode.ID {
		t.Fatalf("after a kill and restart: %+v %v", got, err)
	}
	if _, err := m.Resolve(ctx, &metaapi.ResolveReq{Path: "/datasets/missing"}); metaapi.Errno(err) != syscall.ENOENT {
		t.Fatalf("missing path: %v", err)
	}
}
