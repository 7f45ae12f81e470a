package metaapi

import (
	"context"

	"github.com/flyfs/flyfs/core/rpc"
)

// The trash (metad/ns/trash.go): what it holds, and restores from it.
const (
	MethodTrashList    rpc.Method = 0x0458
	MethodTrashRestore rpc.Method = 0x0459
	MethodTrashEmpty   rpc.Method = 0x045a // remove everything in the trash for good, now
)

func init() {
	rpc.RegisterMethod(MethodTrashList, "metad.TrashList")
	rpc.RegisterMethod(MethodTrashRestore, "metad.TrashRestore")
	rpc.RegisterMethod(MethodTrashEmpty, "metad.TrashEmpty")
}

// TrashEntry is a trashed file or tree: where it was (Path), where it is
// (Trash), when it went (At, unix ns).
type TrashEntry struct {
	Ino    uint64 `cbor:"1,keyasint"`
	Path   string `cbor:"2,keyasint"`
	Type   Type   `cbor:"3,keyasint,omitempty"`
	Length uint64 `cbor:"4,keyasint,omitempty"`
	At     int64  `cbor:"5,keyasint,omitempty"`
	Trash  string `cbor:"6,keyasint,omitempty"`
}

// TrashListResp is the trash's content, oldest first.
type TrashListResp struct {
	Entries []TrashEntry `cbor:"1,keyasint,omitempty"`
	Days    int          `cbor:"2,keyasint,omitempty"` // the answering metad's --trash-days (0: off)
}

// TrashRestoreReq restores the entry of Ino where it was, or into the
// directory ToParent as ToName.
type TrashRestoreReq struct {
	ReqID    RequestID `cbor:"1,keyasint"`
	Ino      uint64    `cbor:"2,keyasint"`
	ToParent uint64    `cbor:"3,keyasint,omitempty"`
	ToName   string    `cbor:"4,keyasint,omitempty"`
}

// TrashRestoreResp says where the entry went.
type TrashRestoreResp struct {
	Path string `cbor:"1,keyasint"`
}

func (c Client) TrashList(ctx context.Context) (*TrashListResp, error) {
	return call[Empty, TrashListResp](ctx, c, MethodTrashList, &Empty{})
}
func (c Client) TrashRestore(ctx context.Context, req *TrashRestoreReq) (*TrashRestoreResp, error) {
	return call[TrashRestoreReq, TrashRestoreResp](ctx, c, MethodTrashRestore, req)
}

// TrashEmptyResp says how many of the trash's hour directories went.
type TrashEmptyResp struct {
	Hours int `cbor:"1,keyasint,omitempty"`
}

func (c Client) TrashEmpty(ctx context.Context) (*TrashEmptyResp, error) {
	return call[Empty, TrashEmptyResp](ctx, c, MethodTrashEmpty, &Empty{})
}
