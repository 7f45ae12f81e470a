package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flyfs/flyfs/core/kv"
)

// Principal is who a signed-in session acts as.
type Principal struct {
	AccessKey string `json:"accessKey"`
	Admin     bool   `json:"admin"`
}

// BucketPerm grants a key access to one bucket ("*": every bucket).
type BucketPerm struct {
	Bucket string `json:"bucket"`
	Read   bool   `json:"read"`
	Write  bool   `json:"write"`
}

// KeySpec describes a key to create.
type KeySpec struct {
	Description string       `json:"description"`
	Admin       bool         `json:"admin"`
	Buckets     []BucketPerm `json:"buckets"`
}

// KeyInfo is a stored access key. Secret is set only in the answer to
// Create: it is shown once and never again.
type KeyInfo struct {
	AccessKey   string       `json:"accessKey"`
	Secret      string       `json:"secret,omitempty"`
	Description string       `json:"description"`
	Admin       bool         `json:"admin"`
	Buckets     []BucketPerm `json:"buckets"`
	Created     time.Time    `json:"created"`
}

// Keys is the access-key store the console signs in against and manages.
// KVKeys is one implementation; the S3 gateway's store can stand in for it.
type Keys interface {
	// Authenticate checks a key pair; ErrBadCredentials when it does not match.
	Authenticate(ctx context.Context, accessKey, secret string) (Principal, error)
	List(ctx context.Context) ([]KeyInfo, error)
	Create(ctx context.Context, spec KeySpec) (KeyInfo, error)
	// SetBuckets replaces a key's per-bucket permissions.
	SetBuckets(ctx context.Context, accessKey string, perms []BucketPerm) error
	// Revoke deletes a key; ErrNoSuchKey when it does not exist.
	Revoke(ctx context.Context, accessKey string) error
}

var (
	// ErrBadCredentials: unknown access key or wrong secret (one error for
	// both, so a caller cannot probe which keys exist).
	ErrBadCredentials = errors.New("console: access key or secret key is wrong")
	ErrNoSuchKey      = errors.New("console: no such access key")
)

// KVKeys keeps access keys in the KV store under the "CKEY" tag, with each
// secret stored only as a salted SHA-256 (secrets are 240 random bits, so a
// plain salted hash is enough; nothing needs the secret back).
type KVKeys struct{ DB *kv.DB }

var keyTag = []byte("CKEY")

type storedKey struct {
	Description string       `json:"d,omitempty"`
	Admin       bool         `json:"a,omitempty"`
	Buckets     []BucketPerm `json:"b,omitempty"`
	Created     int64        `json:"c"`
	Salt        []byte       `json:"s"`
	Hash        []byte       `json:"h"`
}

func kvKey(access string) []byte { return append(slices.Clone(keyTag), access...) }

func hashSecret(salt []byte, secret string) []byte {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(secret))
	return h.Sum(nil)
}

// ValidateBuckets checks per-bucket permissions: a bucket name S3 would
// accept (or "*"), each at most once, granting something.
func ValidateBuckets(perms []BucketPerm) error {
	seen := map[string]bool{}
	for _, p := range perms {
		if p.Bucket != "*" {
			if err := validBucket(p.Bucket); err != nil {
				return err
			}
		}
		if seen[p.Bucket] {
			return fmt.Errorf("bucket %q is listed twice", p.Bucket)
		}
		seen[p.Bucket] = true
		if !p.Read && !p.Write {
			return fmt.Errorf("bucket %q: grant read, write or both (or leave it out)", p.Bucket)
		}
	}
	return nil
}

// validBucket follows S3's bucket naming rules (3-63 of a-z 0-9 . -,
// starting and ending with a letter or digit).
func validBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q: want 3 to 63 characters", b)
	}
	for i, r := range b {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (r == '.' || r == '-') && i > 0 && i < len(b)-1
		if !ok {
			return fmt.Errorf("bucket name %q: use lower-case letters, digits, '.' and '-' (not first or last)", b)
		}
	}
	return nil
}

// Create makes a key with a fresh access key and secret.
func (k KVKeys) Create(ctx context.Context, spec KeySpec) (KeyInfo, error) {
	if len(spec.Description) > 256 {
		return KeyInfo{}, errors.New("description: at most 256 bytes")
	}
	if err := ValidateBuckets(spec.Buckets); err != nil {
		return KeyInfo{}, err
	}
	idb := make([]byte, 10)
	secb := make([]byte, 30)
	salt := make([]byte, 16)
	rand.Read(idb)
	rand.Read(secb)
	rand.Read(salt)
	access := "FK" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(idb)
	secret := base64.RawURLEncoding.EncodeToString(secb)
	now := time.Now()
	rec := storedKey{Description: spec.Description, Admin: spec.Admin, Buckets: spec.Buckets, Created: now.UnixNano(), Salt: salt, Hash: hashSecret(salt, secret)}
	val, err := json.Marshal(rec)
	if err != nil {
		return KeyInfo{}, err
	}
	err = k.DB.Run(ctx, func(tx kv.Txn) error {
		if _, found, err := tx.Get(ctx, kvKey(access)); err != nil {
			return err
		} else if found {
			return errors.New("console: access key collision; try again") // 80 random bits: never in practice
		}
		tx.Set(kvKey(access), val)
		return nil
	})
	if err != nil {
		return KeyInfo{}, fmt.Errorf("create key: %w", err)
	}
	return KeyInfo{AccessKey: access, Secret: secret, Description: spec.Description, Admin: spec.Admin, Buckets: nonNil(spec.Buckets), Created: now.UTC()}, nil
}

func nonNil(p []BucketPerm) []BucketPerm {
	if p == nil {
		return []BucketPerm{}
	}
	return p
}

func (k KVKeys) load(ctx context.Context, access string) (storedKey, bool, error) {
	var rec storedKey
	var found bool
	err := k.DB.RunRead(ctx, func(tx kv.ReadTxn) error {
		v, ok, err := tx.Get(ctx, kvKey(access))
		if err != nil || !ok {
			found = false
			return err
		}
		found = true
		return json.Unmarshal(v, &rec)
	})
	return rec, found, err
}

// Authenticate checks the secret against the stored hash in constant time.
func (k KVKeys) Authenticate(ctx context.Context, access, secret string) (Principal, error) {
	if access == "" || len(access) > 128 || secret == "" {
		return Principal{}, ErrBadCredentials
	}
	rec, found, err := k.load(ctx, access)
	if err != nil {
		return Principal{}, err
	}
	if !found {
		return Principal{}, ErrBadCredentials
	}
	if subtle.ConstantTimeCompare(hashSecret(rec.Salt, secret), rec.Hash) != 1 {
		return Principal{}, ErrBadCredentials
	}
	return Principal{AccessKey: access, Admin: rec.Admin}, nil
}

// List returns every key (without secrets), in access-key order.
func (k KVKeys) List(ctx context.Context) ([]KeyInfo, error) {
	out := []KeyInfo{}
	end := append(slices.Clone(keyTag[:3]), keyTag[3]+1)
	begin := slices.Clone(keyTag)
	for {
		var res kv.RangeResult
		err := k.DB.RunRead(ctx, func(tx kv.ReadTxn) error {
			var err error
			res, err = tx.GetRange(ctx, begin, end, kv.RangeOptions{Limit: 1000})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list keys: %w", err)
		}
		for _, e := range res.KVs {
			var rec storedKey
			if err := json.Unmarshal(e.Value, &rec); err != nil {
				return nil, fmt.Errorf("list keys: record %q: %w", e.Key, err)
			}
			out = append(out, KeyInfo{AccessKey: strings.TrimPrefix(string(e.Key), string(keyTag)), Description: rec.Description,
				Admin: rec.Admin, Buckets: nonNil(rec.Buckets), Created: time.Unix(0, rec.Created).UTC()})
		}
		if !res.More || len(res.KVs) == 0 {
			return out, nil
		}
		begin = append(slices.Clone(res.KVs[len(res.KVs)-1].Key), 0)
	}
}

// SetBuckets replaces a key's per-bucket permissions.
func (k KVKeys) SetBuckets(ctx context.Context, access string, perms []BucketPerm) error {
	if access == "" || len(access) > 128 {
		return ErrNoSuchKey
	}
	if err := ValidateBuckets(perms); err != nil {
		return err
	}
	return k.DB.Run(ctx, func(tx kv.Txn) error {
		v, ok, err := tx.Get(ctx, kvKey(access))
		if err != nil {
			return err
		}
		if !ok {
			return ErrNoSuchKey
		}
		var rec storedKey
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		rec.Buckets = perms
		nv, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		tx.Set(kvKey(access), nv)
		return nil
	})
}

// Revoke deletes a key.
func (k KVKeys) Revoke(ctx context.Context, access string) error {
	if access == "" || len(access) > 128 {
		return ErrNoSuchKey
	}
	return k.DB.Run(ctx, func(tx kv.Txn) error {
		_, ok, err := tx.Get(ctx, kvKey(access))
		if err != nil {
			return err
		}
		if !ok {
			return ErrNoSuchKey
		}
		tx.Clear(kvKey(access))
		return nil
	})
}

// EnsureAdminKey creates an admin key when the store has none, so a new
// cluster can be signed in to; created reports whether it did (and then
// the returned key carries its secret, to print once). With an admin key
// present it returns that key's information, without a secret.
func EnsureAdminKey(ctx context.Context, keys Keys) (KeyInfo, bool, error) {
	list, err := keys.List(ctx)
	if err != nil {
		return KeyInfo{}, false, err
	}
	for _, k := range list {
		if k.Admin {
			return k, false, nil
		}
	}
	k, err := keys.Create(ctx, KeySpec{Description: "first admin key (made at start)", Admin: true})
	return k, err == nil, err
}
