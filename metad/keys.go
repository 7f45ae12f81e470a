package metad

import (
	"context"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/metad/keys"
)

// serveKeys registers the access-key methods over store.
func (s *Server) serveKeys(store *keys.Store) {
	rpc.Handle(s.rpc, metaapi.MethodKeyGet, func(ctx context.Context, r *metaapi.KeyReq, _ []byte) (*metaapi.KeyResp, []byte, error) {
		k, err := store.Get(ctx, r.ID)
		return keyResp(k, false, err)
	})
	rpc.Handle(s.rpc, metaapi.MethodKeyList, func(ctx context.Context, _ *metaapi.Empty, _ []byte) (*metaapi.KeyListResp, []byte, error) {
		list, err := store.List(ctx)
		if err != nil {
			return nil, nil, metaapi.KeyError(err)
		}
		resp := &metaapi.KeyListResp{Keys: make([]access.Key, 0, len(list))}
		for _, k := range list {
			resp.Keys = append(resp.Keys, k.Public())
		}
		return resp, nil, nil
	})
	rpc.Handle(s.rpc, metaapi.MethodKeyCreate, func(ctx context.Context, r *access.Key, _ []byte) (*metaapi.KeyResp, []byte, error) {
		k, err := store.Create(ctx, *r)
		return keyResp(k, true, err)
	})
	rpc.Handle(s.rpc, metaapi.MethodKeyRevoke, func(ctx context.Context, r *metaapi.KeyReq, _ []byte) (*metaapi.Empty, []byte, error) {
		if err := store.Revoke(ctx, r.ID); err != nil {
			return nil, nil, metaapi.KeyError(err)
		}
		return &metaapi.Empty{}, nil, nil
	})
	rpc.Handle(s.rpc, metaapi.MethodKeySetGrants, func(ctx context.Context, r *metaapi.KeyGrantsReq, _ []byte) (*metaapi.Empty, []byte, error) {
		if err := store.SetGrants(ctx, r.ID, r.Buckets); err != nil {
			return nil, nil, metaapi.KeyError(err)
		}
		return &metaapi.Empty{}, nil, nil
	})
	rpc.Handle(s.rpc, metaapi.MethodKeyEnsureRoot, func(ctx context.Context, r *metaapi.KeyRootReq, _ []byte) (*metaapi.KeyResp, []byte, error) {
		k, created, err := store.EnsureRoot(ctx, r.Given)
		return keyResp(k, created, err)
	})
}

func keyResp(k *access.Key, created bool, err error) (*metaapi.KeyResp, []byte, error) {
	if err != nil {
		return nil, nil, metaapi.KeyError(err)
	}
	return &metaapi.KeyResp{Key: *k, Created: created}, nil, nil
}
