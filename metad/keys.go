package metad

import (
	"context"
	"fmt"
	"time"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/metad/keys"
)

// serveKeys registers the access-key methods over the store, sealing any
// secret still stored in plain text; without a master key every method
// refuses.
func (s *Server) serveKeys(cfg Config) error {
	if cfg.MasterKey == nil {
		for _, m := range []rpc.Method{metaapi.MethodKeyGet, metaapi.MethodKeyList, metaapi.MethodKeyCreate,
			metaapi.MethodKeyRevoke, metaapi.MethodKeySetGrants, metaapi.MethodKeyEnsureRoot, metaapi.MethodKeyRotate} {
			handle(s, m, func(context.Context, *metaapi.Empty, []byte) (*metaapi.Empty, []byte, error) {
				return nil, nil, rpc.NewError(rpc.FailedPrecondition, "this metad has no master key, so it keeps no access keys (flyfs metad --master-key-file)")
			})
		}
		return nil
	}
	store, err := keys.New(cfg.KV, cfg.MasterKey)
	if err != nil {
		return fmt.Errorf("metad: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if n, err := store.SealAll(ctx); err != nil {
		s.log.Warn("access keys: sealing the secrets stored in plain text failed; they stay readable and are sealed at the next start", "err", err)
	} else if n > 0 {
		s.log.Info("access keys: sealed the secrets stored in plain text", "keys", n)
	}
	handle(s, metaapi.MethodKeyGet, func(ctx context.Context, r *metaapi.KeyReq, _ []byte) (*metaapi.KeyResp, []byte, error) {
		k, err := store.Get(ctx, r.ID)
		return keyResp(k, false, err)
	})
	handle(s, metaapi.MethodKeyList, func(ctx context.Context, _ *metaapi.Empty, _ []byte) (*metaapi.KeyListResp, []byte, error) {
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
	handle(s, metaapi.MethodKeyCreate, func(ctx context.Context, r *access.Key, _ []byte) (*metaapi.KeyResp, []byte, error) {
		k, err := store.Create(ctx, *r)
		return keyResp(k, true, err)
	})
	handle(s, metaapi.MethodKeyRevoke, func(ctx context.Context, r *metaapi.KeyReq, _ []byte) (*metaapi.Empty, []byte, error) {
		if err := store.Revoke(ctx, r.ID); err != nil {
			return nil, nil, metaapi.KeyError(err)
		}
		return &metaapi.Empty{}, nil, nil
	})
	handle(s, metaapi.MethodKeySetGrants, func(ctx context.Context, r *metaapi.KeyGrantsReq, _ []byte) (*metaapi.Empty, []byte, error) {
		if err := store.SetGrants(ctx, r.ID, r.Buckets); err != nil {
			return nil, nil, metaapi.KeyError(err)
		}
		return &metaapi.Empty{}, nil, nil
	})
	handle(s, metaapi.MethodKeyRotate, func(ctx context.Context, r *metaapi.KeyRotateReq, _ []byte) (*metaapi.KeyResp, []byte, error) {
		k, err := store.Rotate(ctx, r.ID, r.Secret)
		return keyResp(k, true, err)
	})
	handle(s, metaapi.MethodKeyEnsureRoot, func(ctx context.Context, r *metaapi.KeyRootReq, _ []byte) (*metaapi.KeyResp, []byte, error) {
		k, created, err := store.EnsureRoot(ctx, r.Given)
		return keyResp(k, created, err)
	})
	return nil
}

func keyResp(k *access.Key, created bool, err error) (*metaapi.KeyResp, []byte, error) {
	if err != nil {
		return nil, nil, metaapi.KeyError(err)
	}
	return &metaapi.KeyResp{Key: *k, Created: created}, nil, nil
}
