package metaapi

import (
	"context"

	"github.com/flyfs/flyfs/core/rpc"
)

// File locks every mount sees (metad/ns/locks.go): a client keeps a lock
// session alive with LockSession and holds fcntl and flock locks under
// it; an expired session's locks are released.
const (
	MethodLockSession rpc.Method = 0x041d // renew (TTL > 0) or end a client's lock session
	MethodGetLock     rpc.Method = 0x041e // F_GETLK: a conflicting lock, if any
	MethodSetLock     rpc.Method = 0x041f // F_SETLK / flock: set, or EAGAIN on a conflict
)

func init() {
	rpc.RegisterMethod(MethodLockSession, "metad.LockSession")
	rpc.RegisterMethod(MethodGetLock, "metad.GetLock")
	rpc.RegisterMethod(MethodSetLock, "metad.SetLock")
}

// Lock classes and kinds.
const (
	LockPOSIX uint8 = 'p' // fcntl(2) record locks
	LockFlock uint8 = 'f' // flock(2)

	LockRead  uint8 = 1
	LockWrite uint8 = 2
)

// LockSessionReq renews Client's session for TTLms milliseconds, or ends
// it (TTLms 0: its locks are released at once).
type LockSessionReq struct {
	Client string `cbor:"1,keyasint"`
	TTLms  int64  `cbor:"2,keyasint,omitempty"`
}

// FileLock is one lock: [Start, End], End inclusive (MaxUint64: to the end).
type FileLock struct {
	Client string `cbor:"1,keyasint"`
	Owner  uint64 `cbor:"2,keyasint"`
	Kind   uint8  `cbor:"3,keyasint"`
	Start  uint64 `cbor:"4,keyasint"`
	End    uint64 `cbor:"5,keyasint"`
	Pid    uint32 `cbor:"6,keyasint,omitempty"`
}

// LockReq asks about or sets a lock of Ino.
type LockReq struct {
	Ino    uint64   `cbor:"1,keyasint"`
	Class  uint8    `cbor:"2,keyasint"`
	Lock   FileLock `cbor:"3,keyasint"`
	Unlock bool     `cbor:"4,keyasint,omitempty"`
}

// GetLockResp is the conflicting lock, if Found.
type GetLockResp struct {
	Found bool     `cbor:"1,keyasint,omitempty"`
	Lock  FileLock `cbor:"2,keyasint"`
}

func (c Client) LockSession(ctx context.Context, req *LockSessionReq) (*Empty, error) {
	return call[LockSessionReq, Empty](ctx, c, MethodLockSession, req)
}

func (c Client) GetLock(ctx context.Context, req *LockReq) (*GetLockResp, error) {
	return call[LockReq, GetLockResp](ctx, c, MethodGetLock, req)
}

func (c Client) SetLock(ctx context.Context, req *LockReq) (*Empty, error) {
	return call[LockReq, Empty](ctx, c, MethodSetLock, req)
}
