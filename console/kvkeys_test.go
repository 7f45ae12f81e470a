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

// KVKeys is the console tests' key store. In production the console signs in
// against the S3 gateway's keys (cmd/flyfs wires gateway.KeyStore in); a
// service never imports another, so the tests carry their own. It keeps access keys in the KV store under the "CKEY" tag, with each
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
