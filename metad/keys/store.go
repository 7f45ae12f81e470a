// Package keys keeps the cluster's access keys in the metadata KV store: one
// JSON record per key, so every metad on one store serves the same keys.
// Secrets are stored sealed (AES-256-GCM) under a master key kept apart from
// the store, so neither the store's files nor a copy of its data holds one
// in plain text; every metad of a cluster needs the same master key.
//
// Key schema:
//
//	S3K/ + key id  → record: access.Key as JSON without its secret, and the sealed secret
//	S3ROOT         → the id of the root key
//
// A record written before secrets were sealed holds its secret in plain text;
// it still reads, and SealAll rewrites it sealed.
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
type Store struct {
	db   *kv.DB
	seal *sealer
}

// New returns a store over db whose secrets are sealed under master
// (MasterKeySize bytes).
func New(db *kv.DB, master []byte) (*Store, error) {
	s, err := newSealer(master)
	if err != nil {
		return nil, fmt.Errorf("access keys: %w", err)
	}
	return &Store{db: db, seal: s}, nil
}

// record is a key as stored: its secret sealed, the plain field empty.
type record struct {
	access.Key
	Sealed []byte `json:"sealed,omitempty"`
}

// decode reads a stored record; plain says its secret was not sealed.
func (s *Store) decode(id string, v []byte) (k *access.Key, plain bool, err error) {
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, false, fmt.Errorf("access key %s: %w", id, err)
	}
	if r.Sealed == nil {
		return &r.Key, r.Secret != "", nil
	}
	if r.Key.Secret, err = s.seal.open(r.ID, r.Sealed); err != nil {
		return nil, false, fmt.Errorf("access key %s: %w", id, err)
	}
	return &r.Key, false, nil
}

func (s *Store) get(ctx context.Context, tx kv.ReadTxn, id string) (*access.Key, error) {
	v, found, err := tx.Get(ctx, recordKey(id))
	if err != nil || !found {
		return nil, err
	}
	k, _, err := s.decode(id, v)
	return k, err
}

func (s *Store) put(tx kv.Txn, k *access.Key) error {
	r := record{Key: *k, Sealed: s.seal.seal(k.ID, k.Secret)}
	r.Key.Secret = ""
	v, err := json.Marshal(r)
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
		k, err = s.get(ctx, tx, id)
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
		old, err := s.get(ctx, tx, k.ID)
		if err != nil {
			return err
		}
		// Run may re-run after an ambiguous commit: our own record is fine.
		if old != nil && !same(old, &k) {
			return access.ErrKeyExists
		}
		return s.put(tx, &k)
	})
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// Rotate gives key id a new secret (drawn by the caller, so a retry after
// an ambiguous commit sets the same one): the old secret stops working.
func (s *Store) Rotate(ctx context.Context, id, secret string) (*access.Key, error) {
	var out *access.Key
	err := s.db.Run(ctx, func(tx kv.Txn) error {
		k, err := s.get(ctx, tx, id)
		if err != nil {
			return err
		}
		if k == nil {
			return access.ErrNoSuchKey
		}
		k.Secret = secret
		if err := k.Validate(); err != nil {
			return err
		}
		out = k
		return s.put(tx, k)
	})
	return out, err
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
		k, err := s.get(ctx, tx, id)
		if err != nil {
			return err
		}
		if k == nil {
			return nil // gone, or gone already by a re-run after "maybe committed"
		}
		if k.Root {
			others, err := s.otherRoot(ctx, tx, id)
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
func (s *Store) otherRoot(ctx context.Context, tx kv.ReadTxn, id string) (string, error) {
	found := ""
	err := s.scan(ctx, tx, func(k *access.Key, _ bool) bool {
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
		k, err := s.get(ctx, tx, id)
		if err != nil {
			return err
		}
		if k == nil {
			return access.ErrNoSuchKey
		}
		k.Buckets = buckets
		return s.put(tx, k)
	})
}

// List returns every key, sorted by id, secrets included.
func (s *Store) List(ctx context.Context) ([]access.Key, error) {
	var out []access.Key
	err := s.db.RunRead(ctx, func(tx kv.ReadTxn) error {
		out = out[:0]
		return s.scan(ctx, tx, func(k *access.Key, _ bool) bool { out = append(out, *k); return true })
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, err
}

// scan calls f with every stored key in id order until f returns false;
// plain says the record's secret is not sealed.
func (s *Store) scan(ctx context.Context, tx kv.ReadTxn, f func(k *access.Key, plain bool) bool) error {
	r := kv.PrefixRange(keyPrefix)
	begin := r.Begin
	for {
		res, err := tx.GetRange(ctx, begin, r.End, kv.RangeOptions{Limit: 1000})
		if err != nil {
			return err
		}
		for _, e := range res.KVs {
			k, plain, err := s.decode(string(e.Key[len(keyPrefix):]), e.Value)
			if err != nil {
				return err
			}
			if !f(k, plain) {
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
			if k, err = s.get(ctx, tx, string(v)); err != nil {
				return err
			}
			if k != nil && (given == nil || k.Secret == given.Secret) && k.Root {
				created = given == nil && k.ID == nk.ID // a re-run after "maybe committed" finds its own drawn key
				return nil
			}
			if k == nil && given == nil {
				// The marked root key was revoked while another root key
				// remained: that one is the root key now.
				other, err := s.otherRoot(ctx, tx, "")
				if err != nil {
					return err
				}
				if other == "" {
					return fmt.Errorf("root access key %s was revoked and no other root key exists; set FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY to give one", v)
				}
				tx.Set(rootKey, []byte(other))
				k, err = s.get(ctx, tx, other)
				return err
			}
		}
		if err := s.put(tx, &nk); err != nil {
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

// SealAll rewrites every record whose secret is stored in plain text with
// its secret sealed, and reports how many it rewrote.
func (s *Store) SealAll(ctx context.Context) (int, error) {
	var plain []access.Key
	err := s.db.RunRead(ctx, func(tx kv.ReadTxn) error {
		plain = plain[:0]
		return s.scan(ctx, tx, func(k *access.Key, p bool) bool {
			if p {
				plain = append(plain, *k)
			}
			return true
		})
	})
	if err != nil {
		return 0, err
	}
	for i := range plain {
		k := plain[i]
		err := s.db.Run(ctx, func(tx kv.Txn) error {
			v, found, err := tx.Get(ctx, recordKey(k.ID))
			if err != nil || !found {
				return err
			}
			cur, p, err := s.decode(k.ID, v)
			if err != nil || !p {
				return err // sealed meanwhile
			}
			return s.put(tx, cur)
		})
		if err != nil {
			return i, err
		}
	}
	return len(plain), nil
}
