package metaapi

import (
	"context"

	"github.com/flyfs/flyfs/core/rpc"
)

// MethodListSessions lists the namespace's write sessions: the files open
// for writing, by which client.
const MethodListSessions rpc.Method = 0x045b

func init() { rpc.RegisterMethod(MethodListSessions, "metad.ListSessions") }

// ListSessionsReq asks for at most Limit sessions (0: the server's default).
type ListSessionsReq struct {
	Limit int `cbor:"1,keyasint,omitempty"`
}

// OpenFile is one write session: the file (Path: where a create opened it,
// empty for an open by inode), its length now, the client holding it and
// since when (unix ns).
type OpenFile struct {
	Ino    uint64 `cbor:"1,keyasint"`
	Client string `cbor:"2,keyasint,omitempty"`
	Opened int64  `cbor:"3,keyasint,omitempty"`
	Path   string `cbor:"4,keyasint,omitempty"`
	Length uint64 `cbor:"5,keyasint,omitempty"`
}

// ListSessionsResp holds the sessions in inode order; More says the limit
// cut the list.
type ListSessionsResp struct {
	Sessions []OpenFile `cbor:"1,keyasint,omitempty"`
	More     bool       `cbor:"2,keyasint,omitempty"`
}

func (c Client) ListSessions(ctx context.Context, req *ListSessionsReq) (*ListSessionsResp, error) {
	return call[ListSessionsReq, ListSessionsResp](ctx, c, MethodListSessions, req)
}
