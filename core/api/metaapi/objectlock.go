package metaapi

import (
	"context"

	"github.com/flyfs/flyfs/core/rpc"
)

// Object lock (metad/ns/objectlock.go has the rules).

// MethodSetRetention changes a file's retention or legal hold.
const MethodSetRetention rpc.Method = 0x0457

func init() { rpc.RegisterMethod(MethodSetRetention, "metad.SetRetention") }

// RetainMode is a retention mode.
type RetainMode uint8

// The retention modes.
const (
	RetainNone       RetainMode = 0
	RetainGovernance RetainMode = 1
	RetainCompliance RetainMode = 2
)

// ObjectLock is a lock to put on a file.
type ObjectLock struct {
	Mode      RetainMode `cbor:"1,keyasint,omitempty"`
	Until     int64      `cbor:"2,keyasint,omitempty"` // unix ns
	LegalHold bool       `cbor:"3,keyasint,omitempty"`
}

// RetentionReq changes a file's retention (SetRetention: Mode and Until)
// or legal hold (SetHold); Bypass allows weakening governance retention.
type RetentionReq struct {
	Ino          uint64     `cbor:"1,keyasint"`
	SetRetention bool       `cbor:"2,keyasint,omitempty"`
	Mode         RetainMode `cbor:"3,keyasint,omitempty"`
	Until        int64      `cbor:"4,keyasint,omitempty"`
	SetHold      bool       `cbor:"5,keyasint,omitempty"`
	LegalHold    bool       `cbor:"6,keyasint,omitempty"`
	Bypass       bool       `cbor:"7,keyasint,omitempty"`
}

func (c Client) SetRetention(ctx context.Context, req *RetentionReq) (*InodeResp, error) {
	return call[RetentionReq, InodeResp](ctx, c, MethodSetRetention, req)
}
