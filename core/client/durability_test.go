package client

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/durability"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// TestSyncWaitsForAnEarlierSyncOfItsUpdates: a Sync that starts while an
// earlier one is syncing the chains of its updates does not return before
// that one ends; when that one fails, it syncs them itself. (Otherwise a
// second fsync, or the second of two S3 PUTs, would return before the
// disk had its data.)
func TestSyncWaitsForAnEarlierSyncOfItsUpdates(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := 0
	entered := make(chan struct{})
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	srv := rpc.NewServer(rpc.Options{})
	rpc.Handle(srv, storageapi.MethodSync, func(ctx context.Context, _ *storageapi.SyncReq, _ []byte) (*storageapi.SyncResp, []byte, error) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			close(entered)
			<-release
			return nil, nil, rpc.Errorf(rpc.Unavailable, "the disk did not sync")
		}
		return &storageapi.SyncResp{}, nil, nil
	})
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	t.Cleanup(unblock) // runs first: the server cannot close on a blocked handler

	info := &routing.Info{Version: 1,
		Nodes:  map[routing.NodeID]routing.Node{1: {ID: 1, Addr: l.Addr().String()}},
		Chains: map[routing.ChainID]*routing.Chain{7: {ID: 7, Version: 1, Targets: []routing.Target{{ID: 700, Node: 1, Public: routing.Serving}}}}}
	rc := rpc.NewClient(rpc.Options{})
	t.Cleanup(func() { rc.Close() })
	cio := NewChunkIO(routing.NewStatic(info), rc, time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cio.noteUpdate(durability.Relaxed(ctx), 7)
	errA := make(chan error, 1)
	go func() { errA <- cio.Sync(ctx) }()
	<-entered
	errB := make(chan error, 1)
	go func() { errB <- cio.Sync(ctx) }()
	select {
	case err := <-errB:
		t.Fatalf("the second Sync returned (%v) while the first still synced its update", err)
	case <-time.After(200 * time.Millisecond):
	}
	unblock()
	if err := <-errA; err == nil {
		t.Fatal("the first Sync hid its failure")
	}
	if err := <-errB; err != nil {
		t.Fatalf("the second Sync: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 {
		t.Fatalf("%d syncs reached the node, want 2 (the failed one, then the second Sync's own)", calls)
	}
}
