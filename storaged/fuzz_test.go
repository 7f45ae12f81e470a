package storaged_test

import (
	"hash/crc32"
	"testing"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/core/rpc/rpctest"
	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/fxamacker/cbor/v2"
)

// storagedMethods is every method storaged registers, with its request type.
var storagedMethods = []rpctest.Method{
	rpctest.M[storageapi.WriteReq](storageapi.MethodWrite),
	rpctest.M[storageapi.BatchReadReq](storageapi.MethodBatchRead),
	rpctest.M[storageapi.ChunkRange](storageapi.MethodRemoveChunks),
	rpctest.M[storageapi.ChunkRange](storageapi.MethodQueryLastChunk),
	rpctest.M[storageapi.ChunkRange](storageapi.MethodDumpChunkMeta),
	rpctest.M[storageapi.StatsReq](storageapi.MethodStats),
	rpctest.M[storageapi.SyncDoneReq](storageapi.MethodSyncDone),
	rpctest.M[storageapi.SyncReq](storageapi.MethodSync),
}

func storagedMethod(m rpc.Method) uint8 {
	for i, x := range storagedMethods {
		if x.ID == m {
			return uint8(i)
		}
	}
	panic("method not in storagedMethods: " + m.String())
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// resum gives a write request the checksum of its payload, so that the
// fuzzer gets past the checksum check it cannot forge; msg is kept as it
// is when it does not decode.
func resum(msg, payload []byte) []byte {
	var req storageapi.WriteReq
	if len(msg) == 0 || cbor.Unmarshal(msg, &req) != nil {
		return msg
	}
	req.Checksum = crc32.Checksum(payload, castagnoli)
	b, err := cbor.Marshal(&req)
	if err != nil {
		return msg
	}
	return b
}

// FuzzStoragedHandlers sends arbitrary messages and payloads to every
// storaged method over the wire, to the first of two nodes: it heads chain
// 1 (whose writes it forwards to the other) and is the tail of chain 2. No
// input may panic either node, get an Internal error or be decoded
// differently from the request type, and a well-formed call works after
// each.
func FuzzStoragedHandlers(f *testing.F) {
	watch := &rpctest.PanicWatch{}
	c := harness.StartStorage(f, harness.StorageConfig{Nodes: 2, Chains: 2, Replicas: 2, NoSync: true, Logger: watch.Logger()})
	fz := &rpctest.Fuzzer{Addr: c.Nodes[0].Addr, Token: c.Token, Watches: []*rpctest.PanicWatch{watch}}
	f.Cleanup(fz.Close)

	enc := func(v any) []byte {
		b, err := cbor.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	chunk := layout.MakeChunkID(77, 0)
	data := []byte("hello, chunk")
	sum := crc32.Checksum(data, castagnoli)
	head := storageapi.Key{Chain: 1, ChainVer: 1, Chunk: chunk}
	tail := storageapi.Key{Chain: 2, ChainVer: 1, Chunk: chunk}
	add := func(m rpc.Method, req any, payload []byte) {
		f.Add(storagedMethod(m), enc(req), payload, false)
	}
	add(storageapi.MethodWrite, &storageapi.WriteReq{Key: head, Kind: storageapi.KindWrite, Offset: 100, ChunkSize: 1 << 16, Checksum: sum,
		Tag: storageapi.Tag{Client: 5, Channel: 1, Seq: 1}}, data)
	add(storageapi.MethodWrite, &storageapi.WriteReq{Key: head, Kind: storageapi.KindReplace, ChunkSize: 1 << 16, Checksum: sum}, data)
	add(storageapi.MethodWrite, &storageapi.WriteReq{Key: head, Kind: storageapi.KindTruncate, Length: 1 << 15, ChunkSize: 1 << 16, Checksum: crc32.Checksum(nil, castagnoli)}, nil)
	add(storageapi.MethodWrite, &storageapi.WriteReq{Key: tail, Kind: storageapi.KindWrite, ChunkSize: 1 << 16, Checksum: sum, Forwarded: true, UpdateVer: 1}, data)
	add(storageapi.MethodWrite, &storageapi.WriteReq{Key: tail, Kind: storageapi.KindReplace, ChunkSize: 1 << 16, Checksum: sum, Forwarded: true, Resync: true, UpdateVer: 3, CommitVer: 3}, data)
	add(storageapi.MethodWrite, &storageapi.WriteReq{Key: head, Kind: storageapi.KindRemove}, nil)
	add(storageapi.MethodBatchRead, &storageapi.BatchReadReq{IOs: []storageapi.ReadIO{{Key: head, Offset: 0, Length: 1 << 16}, {Key: tail, Offset: 5, Length: 5}}, Relaxed: true}, nil)
	// Shared chunks: a read and a first write through a layer (the chunk of
	// inode 77 above as the layer of inode 78's).
	layer := []layout.LayerChunk{{Chunk: layout.MakeChunkID(79, 0), Len: 1 << 16}, {Chunk: chunk, Len: 50}}
	own := storageapi.Key{Chain: 1, ChainVer: 1, Chunk: layout.MakeChunkID(78, 0)}
	add(storageapi.MethodBatchRead, &storageapi.BatchReadReq{IOs: []storageapi.ReadIO{{Key: own, Length: 1 << 10, Base: layer}}}, nil)
	add(storageapi.MethodWrite, &storageapi.WriteReq{Key: own, Kind: storageapi.KindWrite, Offset: 70, ChunkSize: 1 << 16, Checksum: sum, Base: layer}, data)
	add(storageapi.MethodWrite, &storageapi.WriteReq{Key: own, Kind: storageapi.KindTruncate, Length: 20, ChunkSize: 1 << 16, Checksum: crc32.Checksum(nil, castagnoli), Base: layer}, nil)
	begin, end := layout.InodeChunks(77)
	add(storageapi.MethodRemoveChunks, &storageapi.ChunkRange{Chain: 1, ChainVer: 1, Begin: begin, End: end, Max: 2}, nil)
	add(storageapi.MethodQueryLastChunk, &storageapi.ChunkRange{Chain: 2, ChainVer: 1, Begin: begin, End: end}, nil)
	add(storageapi.MethodDumpChunkMeta, &storageapi.ChunkRange{Chain: 1, Begin: begin}, nil)
	add(storageapi.MethodStats, &storageapi.StatsReq{}, nil)
	add(storageapi.MethodSync, &storageapi.SyncReq{}, nil)
	add(storageapi.MethodSyncDone, &storageapi.SyncDoneReq{Chain: 2, ChainVer: 1, Target: uint32(c.Nodes[0].Targets[1].ID)}, nil)
	f.Add(storagedMethod(storageapi.MethodWrite), enc(&storageapi.WriteReq{Key: head, Kind: storageapi.KindWrite, Offset: 1 << 16, ChunkSize: 1 << 17}), data, true)

	stats := storagedMethods[storagedMethod(storageapi.MethodStats)]
	f.Fuzz(func(t *testing.T, method uint8, msg, payload []byte, fix bool) {
		m := storagedMethods[int(method)%len(storagedMethods)]
		if fix && m.ID == storageapi.MethodWrite {
			msg = resum(msg, payload)
		}
		fz.Call(t, m, msg, payload)
		fz.Healthy(t, stats, nil)
	})
}
