// Package storageapi is storaged's wire API: methods, messages, error codes and
// a typed client stub. Bulk data travels as the RPC payload beside the message.
package storageapi

import (
	"context"

	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/rpc"
)

// Methods of the storage service (service 3).
const (
	MethodWrite          rpc.Method = 0x0301 // an update: from a client to the head, or forwarded hop to hop
	MethodBatchRead      rpc.Method = 0x0302
	MethodRemoveChunks   rpc.Method = 0x0303
	MethodQueryLastChunk rpc.Method = 0x0304
	MethodDumpChunkMeta  rpc.Method = 0x0305
	MethodStats          rpc.Method = 0x0306
	MethodSyncDone       rpc.Method = 0x0307 // a predecessor finished recovering this target
	// MethodSync makes every update the node acknowledged before durable
	// (a relaxed update is acknowledged before: rpc.FlagRelaxed).
	MethodSync rpc.Method = 0x0308
)

// Key names a chunk on a chain, with the chain version the sender routed by.
type Key struct {
	Chain    uint32         `cbor:"1,keyasint"`
	ChainVer uint32         `cbor:"2,keyasint"`
	Chunk    layout.ChunkID `cbor:"3,keyasint"`
}

// Kind is what an update does.
type Kind uint8

const (
	KindWrite    Kind = 1 // write Data at Offset (zero-filling any gap)
	KindReplace  Kind = 2 // the content becomes Data exactly
	KindTruncate Kind = 3 // set the length to Length: cut, or extend with zeros
	KindRemove   Kind = 4 // remove the chunk
)

// Tag identifies a client's update for deduplication: per (client, chain,
// channel), sequence numbers grow; a retry reuses its number.
type Tag struct {
	Client  uint64 `cbor:"1,keyasint"`
	Channel uint32 `cbor:"2,keyasint"`
	Seq     uint64 `cbor:"3,keyasint"`
}

// WriteReq is an update. The payload is the data (KindWrite, KindReplace).
type WriteReq struct {
	Key       Key    `cbor:"1,keyasint"`
	Kind      Kind   `cbor:"2,keyasint"`
	Offset    uint32 `cbor:"3,keyasint,omitempty"`
	Length    uint32 `cbor:"4,keyasint,omitempty"` // KindTruncate: the new length
	ChunkSize uint32 `cbor:"5,keyasint"`
	Checksum  uint32 `cbor:"6,keyasint"` // CRC32C of the payload
	Tag       Tag    `cbor:"7,keyasint,omitempty"`

	// Set by a predecessor forwarding the update down the chain.
	Forwarded bool   `cbor:"8,keyasint,omitempty"`
	UpdateVer uint32 `cbor:"9,keyasint,omitempty"`
	Syncing   bool   `cbor:"10,keyasint,omitempty"` // a full-chunk replace for a syncing successor

	// Resync marks a recovery transfer from the predecessor: the receiver takes
	// the chunk (or its removal) exactly as sent, with these versions, and does
	// not forward it.
	Resync    bool   `cbor:"11,keyasint,omitempty"`
	CommitVer uint32 `cbor:"12,keyasint,omitempty"`

	// Relay asks a replica of the chain to pass a client's update on to the
	// chain's head and return its answer: the way in for a client that
	// reaches the chain but not its head.
	Relay bool `cbor:"13,keyasint,omitempty"`

	// Base is where a client's write or truncate of a chunk the file does
	// not own yet takes the chunk's bytes from (its layers, in order; see
	// core/layout's shared data): the head copies the first that exists and
	// sends the result down the chain as a whole-chunk replace.
	Base []layout.LayerChunk `cbor:"14,keyasint,omitempty"`

	// NoCache: the content need not stay in the replicas' page cache (a
	// large S3 object's): its whole aligned runs go to the disk directly.
	NoCache bool `cbor:"15,keyasint,omitempty"`

	// Staged (with a relaxed update): nothing refers to the chunk until
	// the writer's Sync returns (an S3 body's staging file), so the
	// replicas sync its content at that Sync instead of before its record.
	// A machine crash before it may leave the chunk failing its checksum.
	Staged bool `cbor:"16,keyasint,omitempty"`
}

// ChunkMeta is a chunk's state on one replica.
type ChunkMeta struct {
	Chunk     layout.ChunkID `cbor:"1,keyasint"`
	ChainVer  uint32         `cbor:"2,keyasint"`
	CommitVer uint32         `cbor:"3,keyasint"`
	UpdateVer uint32         `cbor:"4,keyasint"`
	Len       uint32         `cbor:"5,keyasint"`
	Checksum  uint32         `cbor:"6,keyasint"`
	ChunkSize uint32         `cbor:"7,keyasint"`
}

// WriteResp is the chunk's state after the update committed.
type WriteResp struct {
	Meta ChunkMeta `cbor:"1,keyasint"`
}

// ReadIO is one range of one chunk. Base lists the layer chunks to read
// instead, in order, while the chunk itself does not exist.
type ReadIO struct {
	Key    Key                 `cbor:"1,keyasint"`
	Offset uint32              `cbor:"2,keyasint"`
	Length uint32              `cbor:"3,keyasint"`
	Base   []layout.LayerChunk `cbor:"4,keyasint,omitempty"`
}

// BatchReadReq reads many ranges in one call. Relaxed returns a chunk's
// pending version instead of refusing with ChunkNotCommitted. NoCache: the
// bytes need not stay in the replica's page cache (a large S3 object's
// GET): whole aligned runs come from the disk directly.
type BatchReadReq struct {
	IOs     []ReadIO `cbor:"1,keyasint"`
	Relaxed bool     `cbor:"2,keyasint,omitempty"`
	NoCache bool     `cbor:"3,keyasint,omitempty"`
}

// ReadResult is one IO's outcome; its bytes are in the response payload, the
// results' data one after another in order.
type ReadResult struct {
	Code      rpc.Code `cbor:"1,keyasint,omitempty"` // 0: ok
	Message   string   `cbor:"2,keyasint,omitempty"`
	Len       uint32   `cbor:"3,keyasint,omitempty"` // bytes returned (short at the chunk's end)
	CommitVer uint32   `cbor:"4,keyasint,omitempty"`
}

// Err returns the result's error, or nil.
func (r ReadResult) Err() error {
	if r.Code == 0 {
		return nil
	}
	return rpc.NewError(r.Code, r.Message)
}

// BatchReadResp holds one result per IO.
type BatchReadResp struct {
	Results []ReadResult `cbor:"1,keyasint"`
}

// ChunkRange is [Begin, End) of chunk ids on a chain.
type ChunkRange struct {
	Chain    uint32         `cbor:"1,keyasint"`
	ChainVer uint32         `cbor:"2,keyasint"`
	Begin    layout.ChunkID `cbor:"3,keyasint"`
	End      layout.ChunkID `cbor:"4,keyasint"`
	Max      uint32         `cbor:"5,keyasint,omitempty"` // at most this many chunks; 0: a default
}

// RemoveChunksResp tells how many chunks went and whether more remain.
type RemoveChunksResp struct {
	Removed uint32 `cbor:"1,keyasint"`
	More    bool   `cbor:"2,keyasint,omitempty"`
}

// QueryLastChunkResp describes a range's chunks, for settling file length.
type QueryLastChunkResp struct {
	Found     bool           `cbor:"1,keyasint,omitempty"`
	LastChunk layout.ChunkID `cbor:"2,keyasint,omitempty"`
	LastLen   uint32         `cbor:"3,keyasint,omitempty"`
	TotalLen  uint64         `cbor:"4,keyasint,omitempty"`
	Count     uint32         `cbor:"5,keyasint,omitempty"`
	More      bool           `cbor:"6,keyasint,omitempty"`
}

// DumpChunkMetaResp lists a page of a chain's chunk metadata on one target.
type DumpChunkMetaResp struct {
	Metas []ChunkMeta `cbor:"1,keyasint"`
	More  bool        `cbor:"2,keyasint,omitempty"`
}

// SyncDoneReq tells a syncing target that its predecessor has sent it every
// chunk: it is up to date.
type SyncDoneReq struct {
	Chain    uint32 `cbor:"1,keyasint"`
	ChainVer uint32 `cbor:"2,keyasint"`
	Target   uint32 `cbor:"3,keyasint"`
}

// SyncDoneResp acknowledges a SyncDoneReq.
type SyncDoneResp struct{}

// StatsReq asks for a node's stats.
type StatsReq struct{}

// DiskStats is one disk's engine.
type DiskStats struct {
	Path           string `cbor:"1,keyasint"`
	Chunks         uint64 `cbor:"2,keyasint"`
	UsedBytes      uint64 `cbor:"3,keyasint"`
	AllocatedBytes uint64 `cbor:"4,keyasint"`
	ChecksumErrors uint64 `cbor:"5,keyasint,omitempty"`
	ReadOnly       bool   `cbor:"6,keyasint,omitempty"`
	ReadOnlyReason string `cbor:"7,keyasint,omitempty"`

	// Repair of corrupt replicas (a chunk whose content fails its checksum is
	// rewritten from another replica's verified copy).
	RepairedChunks   uint64 `cbor:"8,keyasint,omitempty"`  // chunks rewritten from a good replica
	RepairFailures   uint64 `cbor:"9,keyasint,omitempty"`  // attempts that found no verified copy elsewhere
	UnrepairedChunks uint64 `cbor:"10,keyasint,omitempty"` // chunks known corrupt and not repaired yet

	// Full: the disk ran out of space; writes to its targets fail with
	// NoSpace until space returns, reads go on.
	Full       bool   `cbor:"11,keyasint,omitempty"`
	FullReason string `cbor:"12,keyasint,omitempty"`
}

// TargetStats is one target.
type TargetStats struct {
	Target uint32 `cbor:"1,keyasint"`
	Chain  uint32 `cbor:"2,keyasint"`
	Disk   int    `cbor:"3,keyasint"`
	Local  uint8  `cbor:"4,keyasint,omitempty"` // routing.LocalState as this node reports it

	// Recovery this node runs as the predecessor of a syncing target.
	SyncTarget     uint32 `cbor:"5,keyasint,omitempty"`
	SyncChunksDone uint64 `cbor:"6,keyasint,omitempty"`
	SyncChunks     uint64 `cbor:"7,keyasint,omitempty"`
	SyncBytesDone  uint64 `cbor:"8,keyasint,omitempty"`
	SyncBytes      uint64 `cbor:"9,keyasint,omitempty"` // bytes the recovery sends in all
}

// IOCounters count the client I/O a node served since it started: reads it
// answered, and updates that entered their chain at it (the head), so that
// summing over nodes counts each client byte once, whatever the replication.
type IOCounters struct {
	ReadOps    uint64 `cbor:"1,keyasint,omitempty" json:"readOps"`
	ReadBytes  uint64 `cbor:"2,keyasint,omitempty" json:"readBytes"`
	WriteOps   uint64 `cbor:"3,keyasint,omitempty" json:"writeOps"`
	WriteBytes uint64 `cbor:"4,keyasint,omitempty" json:"writeBytes"`
}

// StatsResp is a node's stats.
type StatsResp struct {
	Node    uint32        `cbor:"1,keyasint"`
	Disks   []DiskStats   `cbor:"2,keyasint"`
	Targets []TargetStats `cbor:"3,keyasint"`
	IO      IOCounters    `cbor:"4,keyasint"`
	// Incarnation changes when the node restarts (its counters start over).
	Incarnation uint64 `cbor:"5,keyasint,omitempty"`
	// ReadLatency and WriteLatency count the client reads (one range of a
	// batch) and writes (at the head, the rest of the chain included) by
	// how long they took, in LatencySlots buckets (latency.go).
	ReadLatency  []uint64 `cbor:"6,keyasint,omitempty"`
	WriteLatency []uint64 `cbor:"7,keyasint,omitempty"`
}

// Client is a typed stub over an rpc.Client.
type Client struct{ RPC *rpc.Client }

// Write sends an update to addr.
func (c Client) Write(ctx context.Context, addr string, req *WriteReq, data []byte) (*WriteResp, error) {
	resp, _, err := rpc.Call[WriteReq, WriteResp](ctx, c.RPC, addr, MethodWrite, req, data)
	return resp, err
}

// BatchRead reads many ranges; data holds the results' bytes in order.
func (c Client) BatchRead(ctx context.Context, addr string, req *BatchReadReq) (*BatchReadResp, []byte, error) {
	return rpc.Call[BatchReadReq, BatchReadResp](ctx, c.RPC, addr, MethodBatchRead, req, nil)
}

// RemoveChunks removes a range of chunks through the chain (send to the head).
func (c Client) RemoveChunks(ctx context.Context, addr string, req *ChunkRange) (*RemoveChunksResp, error) {
	resp, _, err := rpc.Call[ChunkRange, RemoveChunksResp](ctx, c.RPC, addr, MethodRemoveChunks, req, nil)
	return resp, err
}

// QueryLastChunk describes the chunks of a range on one replica.
func (c Client) QueryLastChunk(ctx context.Context, addr string, req *ChunkRange) (*QueryLastChunkResp, error) {
	resp, _, err := rpc.Call[ChunkRange, QueryLastChunkResp](ctx, c.RPC, addr, MethodQueryLastChunk, req, nil)
	return resp, err
}

// DumpChunkMeta lists a page of one replica's chunk metadata for a chain.
func (c Client) DumpChunkMeta(ctx context.Context, addr string, req *ChunkRange) (*DumpChunkMetaResp, error) {
	resp, _, err := rpc.Call[ChunkRange, DumpChunkMetaResp](ctx, c.RPC, addr, MethodDumpChunkMeta, req, nil)
	return resp, err
}

// SyncDone tells a syncing target that recovery finished.
func (c Client) SyncDone(ctx context.Context, addr string, req *SyncDoneReq) error {
	_, _, err := rpc.Call[SyncDoneReq, SyncDoneResp](ctx, c.RPC, addr, MethodSyncDone, req, nil)
	return err
}

// Sync makes every update addr acknowledged before it durable.
func (c Client) Sync(ctx context.Context, addr string) error {
	_, _, err := rpc.Call[SyncReq, SyncResp](ctx, c.RPC, addr, MethodSync, &SyncReq{}, nil)
	return err
}

// SyncReq and SyncResp carry nothing: a Sync covers the whole node.
type (
	SyncReq  struct{}
	SyncResp struct{}
)

// Stats returns a node's stats.
func (c Client) Stats(ctx context.Context, addr string) (*StatsResp, error) {
	resp, _, err := rpc.Call[StatsReq, StatsResp](ctx, c.RPC, addr, MethodStats, &StatsReq{}, nil)
	return resp, err
}
