// Package keys keeps the cluster's access keys in the metadata KV store: one
// JSON record per key, so every metad on one store serves the same keys.
//
// Key schema:
//
//	S3K/ + key id  → access.Key as JSON
//	S3ROOT         → the id of the root key
package keys

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/kv"
)

var (
	keyPrefix = kv.Tag("S3K/")
	rootKey   = kv.Tag("S3ROOT")
)

func recordKey(id string) []byte { return append(append([]byte(nil), keyPrefix...), id...) }

// Store keeps access keys in a KV store.
type Store struct{ db *kv.DB }

// New returns a store over db.
func New(db *kv.DB) *Store { return &Store{db: db} }

func get(ctx context.Context, tx kv.ReadTxn, id string) (*access.Key, error) {
	v, found, err := tx.Get(ctx, recordKey(id))
	if err != nil || !found {
		return nil, err
	}
	k := new(access.Key)
	if err := json.Unmarshal(v, k); err != nil {
		return nil, fmt.Errorf("access key %s: %w", id, err)
	}
	return k, nil
}

func put(tx kv.Txn, k *access.Key) error {
	v, err := json.Marshal(k)
	if err != nil {
		return err
	}
	tx.Set(recordKey(k.ID), v)
	return nil
}

// Get returns the key with this id, or access.ErrNoSuchKey.
func (s *Store) Get(ctx context.Context, id string) (*access.Key, error) {
	var k *access.Key
	err := s.db.RunRead(ctx, func(tx kv.ReadTxn) error {
		var err error
		k, err = get(ctx, tx, id)
		return err
	})
	if err == nil && k == nil {
		err = access.ErrNoSuchKey
	}
	return k, err
}

// Create stores a new key, drawing an empty ID or Secret.
func (s *Store) Create(ctx context.Context, k access.Key) (*access.Key, error) {
	if k.ID == "" {
		k.ID = access.NewKeyID("FLY")
	}
	if k.Secret == "" {
		k.Secret = access.NewSecret()
	}
	if err := k.Validate(); err != nil {
		return nil, err
	}
	if k.Created.IsZero() {
		k.Created = time.Now().UTC().Truncate(time.Second)
	}
	err := s.db.Run(ctx, func(tx kv.Txn) error {
		old, err := get(ctx, tx, k.ID)
		if err != nil {
			return err
		}
		// Run may re-run after an ambiguous commit: our own record is fine.
		if old != nil && !same(old, &k) {
			return access.ErrKeyExists
		}
		return put(tx, &k)
	})
	if err != nil {
		return nil, err
	}
	return &k, nil
}

func same(a, b *access.Key) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Revoke deletes a key, or answers access.ErrNoSuchKey. The last root key
// is not revoked (access.ErrLastRoot): without one nobody could administer
// the cluster, and a restart could not find its root key.
func (s *Store) Revoke(ctx context.Context, id string) error {
	existed := false
	err := s.db.Run(ctx, func(tx kv.Txn) error {
		k, err := get(ctx, tx, id)
		if err != nil {
			return err
		}
		if k == nil {
			return nil // gone, or gone already by a re-run after "maybe committed"
		}
		if k.Root {
			others, err := otherRoot(ctx, tx, id)
			if err != nil {
				return err
			}
			if others == "" {
				return access.ErrLastRoot
			}
		}
		existed = true
		tx.Clear(recordKey(id))
		return nil
	})
	if err == nil && !existed {
		err = access.ErrNoSuchKey
	}
	return err
}

// otherRoot returns the id of a root key other than id ("" if none).
func otherRoot(ctx context.Context, tx kv.ReadTxn, id string) (string, error) {
	found := ""
	err := scan(ctx, tx, func(k *access.Key) bool {
		if k.Root && k.ID != id {
			found = k.ID
			return false
		}
		return true
	})
	return found, err
}

// SetGrants replaces a key's per-bucket permissions.
func (s *Store) SetGrants(ctx context.Context, id string, buckets map[string]access.Permission) error {
	if err := access.ValidateGrants(buckets); err != nil {
		return err
	}
	return s.db.Run(ctx, func(tx kv.Txn) error {
		k, err := get(ctx, tx, id)
		if err != nil {
			return err
		}
		if k == nil {
			return access.ErrNoSuchKey
		}
		k.Buckets = buckets
		return put(tx, k)
	})
}

// List returns every key, sorted by id, secrets included.
func (s *Store) List(ctx context.Context) ([]access.Key, error) {
	var out []access.Key
	err := s.db.RunRead(ctx, func(tx kv.ReadTxn) error {
		out = out[:0]
		return scan(ctx, tx, func(k *access.Key) bool { out = append(out, *k); return true })
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, err
}

// scan calls f with every stored key in id order until f returns false.
func scan(ctx context.Context, tx kv.ReadTxn, f func(*access.Key) bool) error {
	r := kv.PrefixRange(keyPrefix)
	begin := r.Begin
	for {
		res, err := tx.GetRange(ctx, begin, r.End, kv.RangeOptions{Limit: 1000})
		if err != nil {
			return err
		}
		for _, e := range res.KVs {
			var k access.Key
			if err := json.Unmarshal(e.Value, &k); err != nil {
				return fmt.Errorf("access key %q: %w", e.Key, err)
			}
			if !f(&k) {
				return nil
			}
		}
		if !res.More || len(res.KVs) == 0 {
			return nil
		}
		begin = kv.KeyAfter(res.KVs[len(res.KVs)-1].Key)
	}
}

// EnsureRoot makes sure the cluster has a root key and returns it. With
// given (a root credential from the environment) that key becomes the root
// key, stored or updated; without, the root key is drawn on the first call
// and kept. created says this call stored the key (so its caller prints
// it once).
func (s *Store) EnsureRoot(ctx context.Context, given *access.Key) (k *access.Key, created bool, err error) {
	var nk access.Key
	if given != nil {
		if given.ID == "" || given.Secret == "" {
			return nil, false, &access.InvalidError{Msg: "a root key needs both an access key and a secret key"}
		}
		nk = access.Key{ID: given.ID, Secret: given.Secret, Root: true, Description: "root key from the environment",
			Created: time.Now().UTC().Truncate(time.Second)}
	} else {
		nk = access.Key{ID: access.NewKeyID("FLYROOT"), Secret: access.NewSecret(), Root: true,
			Description: "root key generated on first start", Created: time.Now().UTC().Truncate(time.Second)}
	}
	err = s.db.Run(ctx, func(tx kv.Txn) error {
		k, created = nil, false
		v, found, err := tx.Get(ctx, rootKey)
		if err != nil {
			return err
		}
		if found && (given == nil || string(v) == given.ID) {
			if k, err = get(ctx, tx, string(v)); err != nil {
				return err
			}
			if k != nil && (given == nil || k.Secret == given.Secret) && k.Root {
				created = given == nil && k.ID == nk.ID // a re-run after "maybe committed" finds its own drawn key
				return nil
			}
			if k == nil && given == nil {
				// The marked root key was revoked while another root key
				// remained: that one is the root key now.
				other, err := otherRoot(ctx, tx, "")
				if err != nil {
					return err
				}
				if other == "" {
					return fmt.Errorf("root access key %s was revoked and no other root key exists; set FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY to give one", v)
				}
				tx.Set(rootKey, []byte(other))
				k, err = get(ctx, tx, other)
				return err
			}
		}
		if err := put(tx, &nk); err != nil {
			return err
		}
		tx.Set(rootKey, []byte(nk.ID))
		k, created = &nk, true
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("root access key: %w", err)
	}
	return k, created, nil
}
