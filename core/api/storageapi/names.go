package storageapi

import "github.com/flyfs/flyfs/core/rpc"

// The methods' names, for logs and metrics (the method label of the RPC
// metrics).
func init() {
	rpc.RegisterMethod(MethodWrite, "storage.Write")
	rpc.RegisterMethod(MethodBatchRead, "storage.BatchRead")
	rpc.RegisterMethod(MethodRemoveChunks, "storage.RemoveChunks")
	rpc.RegisterMethod(MethodQueryLastChunk, "storage.QueryLastChunk")
	rpc.RegisterMethod(MethodDumpChunkMeta, "storage.DumpChunkMeta")
	rpc.RegisterMethod(MethodStats, "storage.Stats")
	rpc.RegisterMethod(MethodSyncDone, "storage.SyncDone")
	rpc.RegisterMethod(MethodSync, "storage.Sync")
}
