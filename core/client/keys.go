package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/api/metaapi"
)

// keyCacheTTL bounds how long a key looked up stays trusted: a revoke made
// anywhere in the cluster takes effect here within it (and at once when
// made through this client).
const keyCacheTTL = time.Second

// Keys is the cluster's access keys, as metad keeps them. Lookups are
// cached for keyCacheTTL, so a signature check costs no RPC on the hot path.
type Keys struct {
	fs *FS

	mu    sync.Mutex
	cache map[string]cachedKey
}

type cachedKey struct {
	k   *access.Key // nil: known absent
	exp time.Time
}

// Keys returns the access-key API.
func (fs *FS) Keys() *Keys { return fs.keys }

// Get returns the key with this id, or access.ErrNoSuchKey.
func (k *Keys) Get(ctx context.Context, id string) (*access.Key, error) {
	now := time.Now()
	k.mu.Lock()
	c, ok := k.cache[id]
	k.mu.Unlock()
	if ok && now.Before(c.exp) {
		if c.k == nil {
			return nil, access.ErrNoSuchKey
		}
		return c.k, nil
	}
	r, err := callMeta(ctx, k.fs, func(c metaapi.Client) (*metaapi.KeyResp, error) { return c.KeyGet(ctx, id) })
	var key *access.Key
	switch {
	case err == nil:
		key = &r.Key
	case !errors.Is(err, access.ErrNoSuchKey):
		return nil, err
	}
	k.mu.Lock()
	if len(k.cache) > 10000 {
		clear(k.cache)
	}
	k.cache[id] = cachedKey{k: key, exp: now.Add(keyCacheTTL)}
	k.mu.Unlock()
	if key == nil {
		return nil, access.ErrNoSuchKey
	}
	return key, nil
}

// Authenticate returns the key id names if secret is its secret, and
// access.ErrNoSuchKey otherwise (one answer for both, so a caller cannot
// probe which keys exist).
func (k *Keys) Authenticate(ctx context.Context, id, secret string) (*access.Key, error) {
	key, err := k.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !key.Matches(secret) {
		return nil, access.ErrNoSuchKey
	}
	return key, nil
}

// List returns every key, sorted by id, without secrets.
func (k *Keys) List(ctx context.Context) ([]access.Key, error) {
	r, err := callMeta(ctx, k.fs, func(c metaapi.Client) (*metaapi.KeyListResp, error) { return c.KeyList(ctx) })
	if err != nil {
		return nil, err
	}
	return r.Keys, nil
}

// Create stores a new key (an empty ID or Secret is drawn) and returns it
// with its secret.
func (k *Keys) Create(ctx context.Context, key access.Key) (*access.Key, error) {
	if key.ID == "" {
		key.ID = access.NewKeyID("FLY") // drawn here, so a retried create stays one key
	}
	if key.Secret == "" {
		key.Secret = access.NewSecret()
	}
	if key.Created.IsZero() {
		key.Created = time.Now().UTC().Truncate(time.Second)
	}
	r, err := callMeta(ctx, k.fs, func(c metaapi.Client) (*metaapi.KeyResp, error) { return c.KeyCreate(ctx, &key) })
	k.drop(key.ID)
	if err != nil {
		return nil, err
	}
	return &r.Key, nil
}

// Revoke deletes a key, or answers access.ErrNoSuchKey.
func (k *Keys) Revoke(ctx context.Context, id string) error {
	_, err := callMeta(ctx, k.fs, func(c metaapi.Client) (struct{}, error) { return struct{}{}, c.KeyRevoke(ctx, id) })
	k.drop(id)
	return err
}

// SetGrants replaces a key's per-bucket permissions.
func (k *Keys) SetGrants(ctx context.Context, id string, buckets map[string]access.Permission) error {
	req := &metaapi.KeyGrantsReq{ID: id, Buckets: buckets}
	_, err := callMeta(ctx, k.fs, func(c metaapi.Client) (struct{}, error) { return struct{}{}, c.KeySetGrants(ctx, req) })
	k.drop(id)
	return err
}

// Rotate gives a key a new secret and returns the key with it; the old
// secret stops working (at once here, within the key cache's TTL on other
// clients and gateways).
func (k *Keys) Rotate(ctx context.Context, id string) (*access.Key, error) {
	req := &metaapi.KeyRotateReq{ID: id, Secret: access.NewSecret()} // drawn here: a retry sets the same one
	r, err := callMeta(ctx, k.fs, func(c metaapi.Client) (*metaapi.KeyResp, error) { return c.KeyRotate(ctx, req) })
	k.drop(id)
	if err != nil {
		return nil, err
	}
	return &r.Key, nil
}

// EnsureRoot returns the cluster's root key: given (the root credential
// from the environment) becomes it; without, it is drawn on the first call
// and kept. created says this call stored it, so the caller prints it once.
func (k *Keys) EnsureRoot(ctx context.Context, given *access.Key) (key *access.Key, created bool, err error) {
	req := &metaapi.KeyRootReq{Given: given}
	r, err := callMeta(ctx, k.fs, func(c metaapi.Client) (*metaapi.KeyResp, error) { return c.KeyEnsureRoot(ctx, req) })
	if err != nil {
		return nil, false, err
	}
	k.drop(r.Key.ID)
	return &r.Key, r.Created, nil
}

func (k *Keys) drop(id string) {
	k.mu.Lock()
	delete(k.cache, id)
	k.mu.Unlock()
}
