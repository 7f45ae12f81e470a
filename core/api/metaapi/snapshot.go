package metaapi

import (
	"context"

	"github.com/flyfs/flyfs/core/rpc"
)

// Directory snapshots (metad/ns/snapshot.go).
const (
	MethodSnapshotCreate rpc.Method = 0x045d
	MethodSnapshotList   rpc.Method = 0x045e
	MethodSnapshotDelete rpc.Method = 0x045f
)

func init() {
	rpc.RegisterMethod(MethodSnapshotCreate, "metad.SnapshotCreate")
	rpc.RegisterMethod(MethodSnapshotList, "metad.SnapshotList")
	rpc.RegisterMethod(MethodSnapshotDelete, "metad.SnapshotDelete")
}

// Snapshot describes a snapshot: of which tree (Source, at the moment
// Created, unix ns), where its copy is (Path, under Top's .flyfs-snapshots),
// what it holds, and the files open for writing that it did not capture.
type Snapshot struct {
	Top     uint64   `cbor:"1,keyasint" json:"top"`
	Name    string   `cbor:"2,keyasint" json:"name"`
	Root    uint64   `cbor:"3,keyasint" json:"root"`
	Source  string   `cbor:"4,keyasint" json:"source"`
	Path    string   `cbor:"5,keyasint" json:"path"`
	Created int64    `cbor:"6,keyasint" json:"created"`
	Files   int      `cbor:"7,keyasint,omitempty" json:"files"`
	Dirs    int      `cbor:"8,keyasint,omitempty" json:"dirs"`
	Others  int      `cbor:"9,keyasint,omitempty" json:"others"`
	Bytes   uint64   `cbor:"10,keyasint,omitempty" json:"bytes"`
	Skipped []string `cbor:"11,keyasint,omitempty" json:"skipped,omitempty"`
	// Batches: the metadata transactions it was copied in (more than one:
	// namespace changes waited meanwhile); Building: not finished (the
	// metad making it died): delete it.
	Batches  int  `cbor:"12,keyasint,omitempty" json:"batches"`
	Building bool `cbor:"13,keyasint,omitempty" json:"building,omitempty"`
}

// SnapshotCreateReq snapshots directory Dir as Name.
type SnapshotCreateReq struct {
	ReqID RequestID `cbor:"1,keyasint"`
	Dir   uint64    `cbor:"2,keyasint"`
	Name  string    `cbor:"3,keyasint"`
}

// SnapshotResp is one snapshot.
type SnapshotResp struct {
	Snapshot Snapshot `cbor:"1,keyasint"`
}

// SnapshotListResp is every snapshot, by top directory and name.
type SnapshotListResp struct {
	Snapshots []Snapshot `cbor:"1,keyasint,omitempty"`
}

// SnapshotDeleteReq removes snapshot Name of top directory Top.
type SnapshotDeleteReq struct {
	ReqID RequestID `cbor:"1,keyasint"`
	Top   uint64    `cbor:"2,keyasint"`
	Name  string    `cbor:"3,keyasint"`
}

func (c Client) SnapshotCreate(ctx context.Context, req *SnapshotCreateReq) (*SnapshotResp, error) {
	return call[SnapshotCreateReq, SnapshotResp](ctx, c, MethodSnapshotCreate, req)
}
func (c Client) SnapshotList(ctx context.Context) (*SnapshotListResp, error) {
	return call[Empty, SnapshotListResp](ctx, c, MethodSnapshotList, &Empty{})
}
func (c Client) SnapshotDelete(ctx context.Context, req *SnapshotDeleteReq) error {
	_, err := call[SnapshotDeleteReq, Empty](ctx, c, MethodSnapshotDelete, req)
	return err
}
