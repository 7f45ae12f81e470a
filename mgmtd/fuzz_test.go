package mgmtd_test

import (
	"net"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/core/rpc/rpctest"
	"github.com/flyfs/flyfs/mgmtd"
	"github.com/fxamacker/cbor/v2"
)

// mgmtdMethods is every method mgmtd registers, with its request type.
var mgmtdMethods = []rpctest.Method{
	rpctest.M[mgmtdapi.HeartbeatReq](mgmtdapi.MethodHeartbeat),
	rpctest.M[mgmtdapi.GetRoutingReq](mgmtdapi.MethodGetRouting),
	rpctest.M[mgmtdapi.GetPrimaryReq](mgmtdapi.MethodGetPrimary),
	rpctest.M[mgmtdapi.SetChainsReq](mgmtdapi.MethodSetChains),
	rpctest.M[mgmtdapi.SetTargetHeldReq](mgmtdapi.MethodSetTargetHeld),
	rpctest.M[mgmtdapi.ListNodesReq](mgmtdapi.MethodListNodes),
	rpctest.M[mgmtdapi.RegisterReq](mgmtdapi.MethodRegister),
	rpctest.M[mgmtdapi.ListServicesReq](mgmtdapi.MethodListServices),
	rpctest.M[mgmtdapi.SetNodeHeldReq](mgmtdapi.MethodSetNodeHeld),
	rpctest.M[mgmtdapi.AuditReq](mgmtdapi.MethodAudit),
	rpctest.M[mgmtdapi.ListAuditReq](mgmtdapi.MethodListAudit),
}

func mgmtdMethod(m rpc.Method) uint8 {
	for i, x := range mgmtdMethods {
		if x.ID == m {
			return uint8(i)
		}
	}
	panic("method not in mgmtdMethods: " + m.String())
}

// FuzzMgmtdHandlers sends arbitrary messages to every mgmtd method over
// the wire, to a primary mgmtd over memkv whose chain scan runs every 20 ms
// (so what heartbeats and chain changes leave behind is acted on): no input
// may panic it, get an Internal error or be decoded differently from the
// request type, and a well-formed call works after each.
func FuzzMgmtdHandlers(f *testing.F) {
	const token = "mgmtd-fuzz"
	watch := &rpctest.PanicWatch{}
	db := memkv.Open(kv.Options{})
	f.Cleanup(func() { db.Close() })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	s, err := mgmtd.New(mgmtd.Config{ID: "m1", Addr: l.Addr().String(), KV: db, HeartbeatTimeout: 2 * time.Second,
		LeaseLength: time.Second, ScanInterval: 20 * time.Millisecond, Bootstrapping: 100 * time.Millisecond,
		RPC: rpc.Options{Token: token, Logger: watch.Logger()}, Logger: watch.Logger()})
	if err != nil {
		f.Fatal(err)
	}
	go s.Serve(l)
	f.Cleanup(func() { s.Close() })
	for deadline := time.Now().Add(10 * time.Second); !s.IsPrimary(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			f.Fatal("mgmtd did not become primary")
		}
	}
	fz := &rpctest.Fuzzer{Addr: l.Addr().String(), Token: token, Watches: []*rpctest.PanicWatch{watch}}
	f.Cleanup(fz.Close)

	enc := func(v any) []byte {
		b, err := cbor.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	// A cluster to act on: two nodes that heartbeat and a chain over them.
	for _, n := range []routing.NodeID{1, 2} {
		fz.Healthy(f, mgmtdMethods[mgmtdMethod(mgmtdapi.MethodHeartbeat)], enc(&mgmtdapi.HeartbeatReq{Node: n, Addr: "127.0.0.1:1", Seq: 1, Incarnation: 9,
			Targets: []mgmtdapi.TargetReport{{Target: routing.TargetID(100*n + 1), Chain: 1, Local: routing.UpToDate}}}))
	}
	chain := routing.Chain{ID: 1, Targets: []routing.Target{{ID: 101, Node: 1}, {ID: 201, Node: 2}}}
	fz.Healthy(f, mgmtdMethods[mgmtdMethod(mgmtdapi.MethodSetChains)], enc(&mgmtdapi.SetChainsReq{Chains: []routing.Chain{chain}}))

	add := func(m rpc.Method, req any) { f.Add(mgmtdMethod(m), enc(req)) }
	add(mgmtdapi.MethodHeartbeat, &mgmtdapi.HeartbeatReq{Node: 1, Addr: "127.0.0.1:1", Seq: 2, Incarnation: 9,
		Targets: []mgmtdapi.TargetReport{{Target: 101, Chain: 1, Local: routing.Online, Disk: 0}},
		Disks:   []mgmtdapi.DiskReport{{Path: "/d", UsedBytes: 10, FreeBytes: 20}}})
	add(mgmtdapi.MethodHeartbeat, &mgmtdapi.HeartbeatReq{Node: 3, Addr: "127.0.0.1:3", Seq: 1,
		Targets: []mgmtdapi.TargetReport{{Target: 301, Chain: 2, Local: routing.LocalOffline}}})
	add(mgmtdapi.MethodGetRouting, &mgmtdapi.GetRoutingReq{Have: 1})
	add(mgmtdapi.MethodGetPrimary, &mgmtdapi.GetPrimaryReq{})
	add(mgmtdapi.MethodSetChains, &mgmtdapi.SetChainsReq{Chains: []routing.Chain{
		{ID: 1, Targets: []routing.Target{{ID: 201, Node: 2}, {ID: 101, Node: 1}, {ID: 301, Node: 3, Disk: 1}}},
		{ID: 2, Targets: []routing.Target{{ID: 302, Node: 3}}}}})
	add(mgmtdapi.MethodSetTargetHeld, &mgmtdapi.SetTargetHeldReq{Target: 101, Held: true})
	add(mgmtdapi.MethodSetTargetHeld, &mgmtdapi.SetTargetHeldReq{Target: 101})
	add(mgmtdapi.MethodListNodes, &mgmtdapi.ListNodesReq{})
	add(mgmtdapi.MethodRegister, &mgmtdapi.RegisterReq{Kind: mgmtdapi.KindMetad, ID: "meta-1", Addr: "127.0.0.1:5"})
	add(mgmtdapi.MethodListServices, &mgmtdapi.ListServicesReq{Kind: mgmtdapi.KindMetad})
	add(mgmtdapi.MethodSetNodeHeld, &mgmtdapi.SetNodeHeldReq{Node: 3, Held: true, DryRun: true})
	add(mgmtdapi.MethodSetNodeHeld, &mgmtdapi.SetNodeHeldReq{Node: 3, Held: true})
	add(mgmtdapi.MethodSetNodeHeld, &mgmtdapi.SetNodeHeldReq{Node: 3})
	add(mgmtdapi.MethodAudit, &mgmtdapi.AuditReq{Record: mgmtdapi.AuditRecord{By: "console: k", Action: "revoke access key k"}})
	add(mgmtdapi.MethodListAudit, &mgmtdapi.ListAuditReq{Limit: 5})

	getRouting := mgmtdMethods[mgmtdMethod(mgmtdapi.MethodGetRouting)]
	f.Fuzz(func(t *testing.T, method uint8, msg []byte) {
		fz.Call(t, mgmtdMethods[int(method)%len(mgmtdMethods)], msg, nil)
		fz.Healthy(t, getRouting, nil)
	})
}
