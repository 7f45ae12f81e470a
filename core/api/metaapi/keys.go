package metaapi

import (
	"context"
	"errors"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/rpc"
)

// Access-key methods: metad keeps the cluster's access keys (package
// core/access), so the front ends reach them through the client.
const (
	MethodKeyGet        rpc.Method = 0x0430 // one key, secret included (signature checks need it)
	MethodKeyList       rpc.Method = 0x0431 // every key, secrets left out
	MethodKeyCreate     rpc.Method = 0x0432 // a new key; the answer carries its secret
	MethodKeyRevoke     rpc.Method = 0x0433
	MethodKeySetGrants  rpc.Method = 0x0434 // replace a key's per-bucket permissions
	MethodKeyEnsureRoot rpc.Method = 0x0435 // the root key, drawn on first use or given
	MethodKeyRotate     rpc.Method = 0x0436 // a new secret for a key
)

// Error codes of the access-key methods.
const (
	CodeNoSuchKey   = rpc.CodeServiceBase + 0x410 + iota // the key does not exist
	CodeKeyExists                                        // a key with this id exists
	CodeInvalidKey                                       // the key or its grants are malformed; the message says how
	CodeLastRootKey                                      // revoking the only root key
)

func init() {
	rpc.RegisterMethod(MethodKeyGet, "metad.KeyGet")
	rpc.RegisterMethod(MethodKeyList, "metad.KeyList")
	rpc.RegisterMethod(MethodKeyCreate, "metad.KeyCreate")
	rpc.RegisterMethod(MethodKeyRevoke, "metad.KeyRevoke")
	rpc.RegisterMethod(MethodKeySetGrants, "metad.KeySetGrants")
	rpc.RegisterMethod(MethodKeyEnsureRoot, "metad.KeyEnsureRoot")
	rpc.RegisterMethod(MethodKeyRotate, "metad.KeyRotate")
	rpc.RegisterCode(CodeNoSuchKey, "NoSuchKey")
	rpc.RegisterCode(CodeKeyExists, "KeyExists")
	rpc.RegisterCode(CodeInvalidKey, "InvalidKey")
	rpc.RegisterCode(CodeLastRootKey, "LastRootKey")
}

// KeyReq names a key.
type KeyReq struct {
	ID string `cbor:"1,keyasint"`
}

// KeyResp carries one key.
type KeyResp struct {
	Key access.Key `cbor:"1,keyasint"`
	// Created: EnsureRoot stored the key just now.
	Created bool `cbor:"2,keyasint,omitempty"`
}

// KeyListResp lists keys without their secrets.
type KeyListResp struct {
	Keys []access.Key `cbor:"1,keyasint"`
}

// KeyGrantsReq replaces a key's per-bucket permissions.
type KeyGrantsReq struct {
	ID      string                       `cbor:"1,keyasint"`
	Buckets map[string]access.Permission `cbor:"2,keyasint"`
}

// KeyRootReq asks for the root key; Given, when set, is the root
// credential from the environment.
type KeyRootReq struct {
	Given *access.Key `cbor:"1,keyasint,omitempty"`
}

// KeyError turns an access-key error into its wire error.
func KeyError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, access.ErrNoSuchKey):
		return rpc.NewError(CodeNoSuchKey, err.Error())
	case errors.Is(err, access.ErrKeyExists):
		return rpc.NewError(CodeKeyExists, err.Error())
	case errors.Is(err, access.ErrInvalid):
		return rpc.NewError(CodeInvalidKey, err.Error())
	case errors.Is(err, access.ErrLastRoot):
		return rpc.NewError(CodeLastRootKey, err.Error())
	}
	return err
}

// keyErr turns a wire error back into access's errors.
func keyErr(err error) error {
	var re *rpc.Error
	if !errors.As(err, &re) {
		return err
	}
	switch re.Code {
	case CodeNoSuchKey:
		return access.ErrNoSuchKey
	case CodeKeyExists:
		return access.ErrKeyExists
	case CodeInvalidKey:
		return &access.InvalidError{Msg: re.Message}
	case CodeLastRootKey:
		return access.ErrLastRoot
	}
	return err
}

func keyCall[Req, Resp any](ctx context.Context, c Client, m rpc.Method, req *Req) (*Resp, error) {
	resp, err := call[Req, Resp](ctx, c, m, req)
	return resp, keyErr(err)
}

func (c Client) KeyGet(ctx context.Context, id string) (*KeyResp, error) {
	return keyCall[KeyReq, KeyResp](ctx, c, MethodKeyGet, &KeyReq{ID: id})
}

func (c Client) KeyList(ctx context.Context) (*KeyListResp, error) {
	return keyCall[Empty, KeyListResp](ctx, c, MethodKeyList, &Empty{})
}

func (c Client) KeyCreate(ctx context.Context, k *access.Key) (*KeyResp, error) {
	return keyCall[access.Key, KeyResp](ctx, c, MethodKeyCreate, k)
}

func (c Client) KeyRevoke(ctx context.Context, id string) error {
	_, err := keyCall[KeyReq, Empty](ctx, c, MethodKeyRevoke, &KeyReq{ID: id})
	return err
}

func (c Client) KeySetGrants(ctx context.Context, req *KeyGrantsReq) error {
	_, err := keyCall[KeyGrantsReq, Empty](ctx, c, MethodKeySetGrants, req)
	return err
}

func (c Client) KeyEnsureRoot(ctx context.Context, req *KeyRootReq) (*KeyResp, error) {
	return keyCall[KeyRootReq, KeyResp](ctx, c, MethodKeyEnsureRoot, req)
}

// KeyRotateReq gives a key a new secret (drawn by the caller).
type KeyRotateReq struct {
	ID     string `cbor:"1,keyasint"`
	Secret string `cbor:"2,keyasint"`
}

func (c Client) KeyRotate(ctx context.Context, req *KeyRotateReq) (*KeyResp, error) {
	return keyCall[KeyRotateReq, KeyResp](ctx, c, MethodKeyRotate, req)
}
