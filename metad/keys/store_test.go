package keys

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
)

var testMaster = bytes.Repeat([]byte{7}, MasterKeySize)

func newStore(t *testing.T, db *kv.DB) *Store {
	t.Helper()
	s, err := New(db, testMaster)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// No secret is stored in plain text; a store with another master key cannot
// read it; records of before sealing still read and SealAll seals them.
func TestSecretsAreSealed(t *testing.T) {
	ctx := context.Background()
	db := memkv.Open(kv.Options{})
	s := newStore(t, db)
	k, err := s.Create(ctx, access.Key{Buckets: map[string]access.Permission{"data": access.Read}})
	if err != nil {
		t.Fatal(err)
	}
	raw := func(id string) []byte {
		var v []byte
		db.RunRead(ctx, func(tx kv.ReadTxn) error { v, _, err = tx.Get(ctx, recordKey(id)); return err })
		return v
	}
	if v := raw(k.ID); len(v) == 0 || bytes.Contains(v, []byte(k.Secret)) {
		t.Fatalf("the stored record holds the secret in plain text: %s", v)
	}
	other, _ := New(db, bytes.Repeat([]byte{8}, MasterKeySize))
	if _, err := other.Get(ctx, k.ID); err == nil {
		t.Fatal("a store with another master key read the secret")
	}
	if _, err := New(db, []byte("short")); err == nil {
		t.Fatal("a short master key was taken")
	}
	// A record of before sealing: the secret in plain text.
	legacy, _ := json.Marshal(access.Key{ID: "FLYLEGACY", Secret: "legacy-secret-123", Buckets: map[string]access.Permission{"*": access.Read}})
	db.Run(ctx, func(tx kv.Txn) error { tx.Set(recordKey("FLYLEGACY"), legacy); return nil })
	if got, err := s.Get(ctx, "FLYLEGACY"); err != nil || got.Secret != "legacy-secret-123" {
		t.Fatalf("a plain record: %+v %v", got, err)
	}
	if n, err := s.SealAll(ctx); err != nil || n != 1 {
		t.Fatalf("SealAll: %d %v", n, err)
	}
	if v := raw("FLYLEGACY"); bytes.Contains(v, []byte("legacy-secret-123")) {
		t.Fatal("SealAll left the secret in plain text")
	}
	if got, err := s.Get(ctx, "FLYLEGACY"); err != nil || got.Secret != "legacy-secret-123" {
		t.Fatalf("after SealAll: %+v %v", got, err)
	}
	if n, _ := s.SealAll(ctx); n != 0 {
		t.Fatalf("SealAll twice rewrote %d", n)
	}
}

func TestStoreLifecycle(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, memkv.Open(kv.Options{}))
	k, err := s.Create(ctx, access.Key{UID: 7, Buckets: map[string]access.Permission{"data": access.Read}})
	if err != nil {
		t.Fatal(err)
	}
	if !access.ValidKeyID(k.ID) || len(k.Secret) != 40 || k.Created.IsZero() {
		t.Fatalf("drawn key %+v", k)
	}
	got, err := s.Get(ctx, k.ID)
	if err != nil || got.Secret != k.Secret || got.UID != 7 {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := s.Create(ctx, access.Key{ID: k.ID, Secret: "another-secret"}); !errors.Is(err, access.ErrKeyExists) {
		t.Fatalf("a second key of one id: %v", err)
	}
	if _, err := s.Create(ctx, access.Key{Buckets: map[string]access.Permission{"BAD": access.Read}}); !errors.Is(err, access.ErrInvalid) {
		t.Fatalf("a bad grant: %v", err)
	}
	if err := s.SetGrants(ctx, k.ID, map[string]access.Permission{"*": access.ReadWrite}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, k.ID); len(got.Buckets) != 1 || got.Buckets["*"] != access.ReadWrite {
		t.Fatalf("grants after set: %+v", got.Buckets)
	}
	if err := s.SetGrants(ctx, "FLYNONE", nil); !errors.Is(err, access.ErrNoSuchKey) {
		t.Fatalf("grants of a missing key: %v", err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != k.ID {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := s.Revoke(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke(ctx, k.ID); !errors.Is(err, access.ErrNoSuchKey) {
		t.Fatalf("revoke twice: %v", err)
	}
	if _, err := s.Get(ctx, k.ID); !errors.Is(err, access.ErrNoSuchKey) {
		t.Fatalf("get after revoke: %v", err)
	}
}

func TestEnsureRoot(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, memkv.Open(kv.Options{}))
	first, created, err := s.EnsureRoot(ctx, nil)
	if err != nil || !created || !first.Root {
		t.Fatalf("first: %+v %v %v", first, created, err)
	}
	again, created, err := s.EnsureRoot(ctx, nil)
	if err != nil || created || again.ID != first.ID || again.Secret != first.Secret {
		t.Fatalf("second: %+v %v %v", again, created, err)
	}
	// A root credential from the environment becomes the root key, and a
	// restart with it changes nothing.
	given := &access.Key{ID: "admin", Secret: "admin-secret"}
	env, created, err := s.EnsureRoot(ctx, given)
	if err != nil || !created || env.ID != "admin" || !env.Root {
		t.Fatalf("given: %+v %v %v", env, created, err)
	}
	if _, created, err := s.EnsureRoot(ctx, given); err != nil || created {
		t.Fatalf("given again: %v %v", created, err)
	}
	if k, _, err := s.EnsureRoot(ctx, nil); err != nil || k.ID != "admin" {
		t.Fatalf("without the environment after it: %+v %v", k, err)
	}
	// A changed secret in the environment replaces the stored one.
	if k, created, err := s.EnsureRoot(ctx, &access.Key{ID: "admin", Secret: "new-secret"}); err != nil || !created || k.Secret != "new-secret" {
		t.Fatalf("new secret: %+v %v %v", k, created, err)
	}
	// The last root key cannot be revoked; with another root key it can,
	// and that one is the root key from then on (a restart finds it).
	s2 := newStore(t, memkv.Open(kv.Options{}))
	gen, _, _ := s2.EnsureRoot(ctx, nil)
	if err := s2.Revoke(ctx, gen.ID); !errors.Is(err, access.ErrLastRoot) {
		t.Fatalf("revoking the only root key: %v", err)
	}
	admin2, err := s2.Create(ctx, access.Key{Root: true, Description: "second admin"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Revoke(ctx, gen.ID); err != nil {
		t.Fatalf("revoking one of two root keys: %v", err)
	}
	if k, created, err := s2.EnsureRoot(ctx, nil); err != nil || created || k.ID != admin2.ID {
		t.Fatalf("after the generated root key went: %+v %v %v", k, created, err)
	}
	if err := s2.Revoke(ctx, admin2.ID); !errors.Is(err, access.ErrLastRoot) {
		t.Fatalf("revoking the remaining root key: %v", err)
	}
}

// Under injected KV faults, including commits that report "maybe committed"
// after they did commit, every call still ends in one key each.
func TestStoreUnderFaults(t *testing.T) {
	ctx := context.Background()
	db := memkv.Open(kv.Options{Faults: &kv.Faults{ReadRate: 0.1, CommitRate: 0.3, Seed: 7}})
	s := newStore(t, db)
	made := map[string]bool{}
	for i := 0; i < 50; i++ {
		k, err := s.Create(ctx, access.Key{Buckets: map[string]access.Permission{"data": access.Read}})
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		made[k.ID] = true
	}
	root, _, err := s.EnsureRoot(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(made)+1 {
		t.Fatalf("%d keys stored, want %d", len(list), len(made)+1)
	}
	if again, _, err := s.EnsureRoot(ctx, nil); err != nil || again.ID != root.ID {
		t.Fatalf("root changed under faults: %v", err)
	}
	if c := db.FaultCounts(); c.MaybeCommitted == 0 {
		t.Fatalf("no ambiguous commit was injected: %+v", c)
	}
}
