package metaapi

import (
	"context"

	"github.com/flyfs/flyfs/core/rpc"
)

// MethodClone makes a file that shares another's bytes (a zero-copy copy).
const MethodClone rpc.Method = 0x045c

func init() { rpc.RegisterMethod(MethodClone, "metad.Clone") }

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
