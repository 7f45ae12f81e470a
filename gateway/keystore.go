package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/kv"
)

// Access keys live in the KV store under keyPrefix, one JSON record per key,
// so every gateway on one store sees the same keys. A short cache keeps the
// hot path off the store; a revoke through this gateway drops it at once,
// and through another gateway it takes effect within keyCacheTTL.

const (
	keyPrefix   = "S3K/"
	rootKeyName = "S3ROOT" // the id of the generated root key
	keyCacheTTL = time.Second
)

// Permission of a key on a bucket.
type Permission string

const (
	PermRead      Permission = "read"
	PermReadWrite Permission = "readwrite"
)

// AccessKey is one S3 credential and what it may do.
type AccessKey struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
	// UID/GID own the files and directories this key creates.
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
	// Buckets maps a bucket name (or "*" for every bucket) to a permission.
	Buckets     map[string]Permission `json:"buckets,omitempty"`
	Root        bool                  `json:"root,omitempty"`
	Description string                `json:"description,omitempty"`
	Created     time.Time             `json:"created"`
}

// allows says whether the key may do an operation needing need on bucket
// (bucket "" is a service-level operation such as CreateBucket).
func (k *AccessKey) allows(bucket string, need Permission) bool {
	if k.Root {
		return true
	}
	p, ok := k.Buckets[bucket]
	if !ok || bucket == "" {
		p, ok = k.Buckets["*"]
	}
	if !ok {
		return false
	}
	return need == PermRead || p == PermReadWrite
}

// seesBucket says whether ListBuckets shows bucket to this key.
func (k *AccessKey) seesBucket(bucket string) bool { return k.allows(bucket, PermRead) }

// KeyStore keeps access keys in the KV store.
type KeyStore struct {
	db *kv.DB

	mu    sync.Mutex
	cache map[string]cachedKey
}

type cachedKey struct {
	k   *AccessKey // nil: known absent
	exp time.Time
}

// NewKeyStore returns a store over db.
func NewKeyStore(db *kv.DB) *KeyStore {
	return &KeyStore{db: db, cache: map[string]cachedKey{}}
}

func keyKey(id string) []byte { return []byte(keyPrefix + id) }

// validKeyID: what an access key id may be (it travels in the Credential
// field, split on '/').
func validKeyID(id string) bool {
	if len(id) < 3 || len(id) > 128 {
		return false
	}
	for _, c := range []byte(id) {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Get returns the key with this id (nil, nil if there is none).
func (s *KeyStore) Get(ctx context.Context, id string) (*AccessKey, error) {
	now := time.Now()
	s.mu.Lock()
	c, ok := s.cache[id]
	s.mu.Unlock()
	if ok && now.Before(c.exp) {
		return c.k, nil
	}
	var k *AccessKey
	err := s.db.RunRead(ctx, func(tx kv.ReadTxn) error {
		v, found, err := tx.Get(ctx, keyKey(id))
		if err != nil || !found {
			k = nil
			return err
		}
		k = new(AccessKey)
		return json.Unmarshal(v, k)
	})
	if err != nil {
		return nil, fmt.Errorf("read access key: %w", err)
	}
	s.mu.Lock()
	if len(s.cache) > 10000 {
		clear(s.cache)
	}
	s.cache[id] = cachedKey{k: k, exp: now.Add(keyCacheTTL)}
	s.mu.Unlock()
	return k, nil
}

// Create stores a new key. An empty ID or Secret is generated.
func (s *KeyStore) Create(ctx context.Context, k AccessKey) (*AccessKey, error) {
	if k.ID == "" {
		k.ID = "FLY" + randomString(17, upperAlnum)
	}
	if k.Secret == "" {
		k.Secret = randomString(40, secretChars)
	}
	if !validKeyID(k.ID) {
		return nil, fmt.Errorf("access key id %q: want 3..128 of A-Z a-z 0-9 - _ .", k.ID)
	}
	if len(k.Secret) < 8 {
		return nil, errors.New("secret key: want at least 8 characters")
	}
	for b, p := range k.Buckets {
		if b != "*" && !validBucketName(b) {
			return nil, fmt.Errorf("bucket %q is not a valid bucket name", b)
		}
		if p != PermRead && p != PermReadWrite {
			return nil, fmt.Errorf("bucket %q: permission %q, want read or readwrite", b, p)
		}
	}
	if k.Created.IsZero() {
		k.Created = time.Now().UTC().Truncate(time.Second)
	}
	v, err := json.Marshal(k)
	if err != nil {
		return nil, err
	}
	err = s.db.Run(ctx, func(tx kv.Txn) error {
		old, found, err := tx.Get(ctx, keyKey(k.ID))
		if err != nil {
			return err
		}
		// Run may re-run after an ambiguous commit: our own record is fine.
		if found && string(old) != string(v) {
			return errAccessKeyExists
		}
		tx.Set(keyKey(k.ID), v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.drop(k.ID)
	return &k, nil
}

var errAccessKeyExists = errors.New("an access key with this id exists")

// Revoke deletes a key. It reports whether the key existed.
func (s *KeyStore) Revoke(ctx context.Context, id string) (bool, error) {
	var existed bool
	err := s.db.Run(ctx, func(tx kv.Txn) error {
		_, found, err := tx.Get(ctx, keyKey(id))
		if err != nil {
			return err
		}
		existed = found
		tx.Clear(keyKey(id))
		return nil
	})
	s.drop(id)
	return existed, err
}

// List returns every key, sorted by id.
func (s *KeyStore) List(ctx context.Context) ([]AccessKey, error) {
	var out []AccessKey
	err := s.db.RunRead(ctx, func(tx kv.ReadTxn) error {
		out = out[:0]
		begin := []byte(keyPrefix)
		end := []byte(keyPrefix[:len(keyPrefix)-1] + string(rune(keyPrefix[len(keyPrefix)-1]+1)))
		for {
			res, err := tx.GetRange(ctx, begin, end, kv.RangeOptions{Limit: 1000})
			if err != nil {
				return err
			}
			for _, e := range res.KVs {
				var k AccessKey
				if err := json.Unmarshal(e.Value, &k); err != nil {
					return fmt.Errorf("access key %q: %w", e.Key, err)
				}
				out = append(out, k)
			}
			if !res.More || len(res.KVs) == 0 {
				return nil
			}
			begin = append(append([]byte{}, res.KVs[len(res.KVs)-1].Key...), 0)
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, err
}

func (s *KeyStore) drop(id string) {
	s.mu.Lock()
	delete(s.cache, id)
	s.mu.Unlock()
}

// EnsureRoot returns the store's generated root key, creating it on the
// first start; created says it was just made (so the caller prints it).
func (s *KeyStore) EnsureRoot(ctx context.Context) (k *AccessKey, created bool, err error) {
	var id string
	err = s.db.Run(ctx, func(tx kv.Txn) error {
		v, found, err := tx.Get(ctx, []byte(rootKeyName))
		if err != nil {
			return err
		}
		if found {
			id, created = string(v), false
			return nil
		}
		nk := AccessKey{ID: "FLYROOT" + randomString(13, upperAlnum), Secret: randomString(40, secretChars), Root: true,
			Description: "root key generated on first start", Created: time.Now().UTC().Truncate(time.Second)}
		val, err := json.Marshal(nk)
		if err != nil {
			return err
		}
		tx.Set([]byte(rootKeyName), []byte(nk.ID))
		tx.Set(keyKey(nk.ID), val)
		id, created = nk.ID, true
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("root access key: %w", err)
	}
	k, err = s.Get(ctx, id)
	if err == nil && k == nil {
		err = fmt.Errorf("root access key %s was revoked; set FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY", id)
	}
	return k, created, err
}

const (
	upperAlnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	secretChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

func randomString(n int, alphabet string) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte(alphabet[int(c)%len(alphabet)])
	}
	return sb.String()
}

// SetBuckets replaces a key's per-bucket permissions in one transaction
// (the console's key page edits them).
func (s *KeyStore) SetBuckets(ctx context.Context, id string, buckets map[string]Permission) error {
	for b, p := range buckets {
		if b != "*" && !validBucketName(b) {
			return fmt.Errorf("bucket %q is not a valid bucket name", b)
		}
		if p != PermRead && p != PermReadWrite {
			return fmt.Errorf("bucket %q: permission %q, want read or readwrite", b, p)
		}
	}
	err := s.db.Run(ctx, func(tx kv.Txn) error {
		v, found, err := tx.Get(ctx, keyKey(id))
		if err != nil {
			return err
		}
		if !found {
			return ErrNoSuchAccessKey
		}
		var k AccessKey
		if err := json.Unmarshal(v, &k); err != nil {
			return fmt.Errorf("access key %s: %w", id, err)
		}
		k.Buckets = buckets
		nv, err := json.Marshal(k)
		if err != nil {
			return err
		}
		tx.Set(keyKey(id), nv)
		return nil
	})
	s.drop(id)
	return err
}

// ErrNoSuchAccessKey: SetBuckets of a key that does not exist.
var ErrNoSuchAccessKey = errors.New("no such access key")
