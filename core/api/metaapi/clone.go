package metaapi

import (
	"context"

	"github.com/flyfs/flyfs/core/rpc"
)

// Zero-copy copies: a new file that shares another's bytes, or an empty
// file open for writing given another's bytes (copy_file_range).
const (
	MethodClone     rpc.Method = 0x045c
	MethodCloneInto rpc.Method = 0x0460
)

func init() {
	rpc.RegisterMethod(MethodClone, "metad.Clone")
	rpc.RegisterMethod(MethodCloneInto, "metad.CloneInto")
}

// CloneReq makes Name in Parent with the bytes of Src. Preserve keeps Src's
// mode, owner, times and xattrs; otherwise the clone has Mode, UID, GID and
// the time now. Answered with the new file (InodeResp); EBUSY while Src is
// open for writing.
type CloneReq struct {
	ReqID    RequestID `cbor:"1,keyasint"`
	Src      uint64    `cbor:"2,keyasint"`
	Parent   uint64    `cbor:"3,keyasint"`
	Name     string    `cbor:"4,keyasint"`
	Preserve bool      `cbor:"5,keyasint,omitempty"`
	Mode     uint32    `cbor:"6,keyasint,omitempty"`
	UID      uint32    `cbor:"7,keyasint,omitempty"`
	GID      uint32    `cbor:"8,keyasint,omitempty"`
}

func (c Client) Clone(ctx context.Context, req *CloneReq) (*InodeResp, error) {
	return call[CloneReq, InodeResp](ctx, c, MethodClone, req)
}

// CloneIntoReq gives the empty file of the write session Session, which has
// written nothing, the bytes (and the layout) of Src. Answered with the
// file (InodeResp); EBUSY while Src has a writer or the file another.
type CloneIntoReq struct {
	ReqID   RequestID `cbor:"1,keyasint"`
	Src     uint64    `cbor:"2,keyasint"`
	Session []byte    `cbor:"3,keyasint"`
}

func (c Client) CloneInto(ctx context.Context, req *CloneIntoReq) (*InodeResp, error) {
	return call[CloneIntoReq, InodeResp](ctx, c, MethodCloneInto, req)
}
