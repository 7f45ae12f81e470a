package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"sort"

	"github.com/flyfs/flyfs/console"
	"github.com/flyfs/flyfs/gateway"
)

// consoleKeys lets the console sign in against, and manage, the S3
// gateway's access keys, so a key made in the console works for S3 and the
// gateway's root key signs in to the console. It lives here, in the wiring,
// because a service never imports another service.
type consoleKeys struct {
	store *gateway.KeyStore
	// rootID/rootSecret: a root key given by the environment
	// (FLYFS_ACCESS_KEY), which is not in the store.
	rootID, rootSecret string
}

var _ console.Keys = consoleKeys{}

func (c consoleKeys) Authenticate(ctx context.Context, accessKey, secret string) (console.Principal, error) {
	if c.rootID != "" && accessKey == c.rootID {
		if subtle.ConstantTimeCompare([]byte(c.rootSecret), []byte(secret)) != 1 {
			return console.Principal{}, console.ErrBadCredentials
		}
		return console.Principal{AccessKey: accessKey, Admin: true}, nil
	}
	k, err := c.store.Get(ctx, accessKey)
	if err != nil {
		return console.Principal{}, err
	}
	if k == nil || subtle.ConstantTimeCompare([]byte(k.Secret), []byte(secret)) != 1 {
		return console.Principal{}, console.ErrBadCredentials
	}
	return console.Principal{AccessKey: k.ID, Admin: k.Root}, nil
}

func keyInfo(k gateway.AccessKey) console.KeyInfo {
	info := console.KeyInfo{AccessKey: k.ID, Description: k.Description, Admin: k.Root, Created: k.Created, Buckets: []console.BucketPerm{}}
	for b, p := range k.Buckets {
		info.Buckets = append(info.Buckets, console.BucketPerm{Bucket: b, Read: true, Write: p == gateway.PermReadWrite})
	}
	sort.Slice(info.Buckets, func(i, j int) bool { return info.Buckets[i].Bucket < info.Buckets[j].Bucket })
	return info
}

func (c consoleKeys) List(ctx context.Context) ([]console.KeyInfo, error) {
	keys, err := c.store.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]console.KeyInfo, 0, len(keys))
	for _, k := range keys {
		out = append(out, keyInfo(k))
	}
	return out, nil
}

func bucketPerms(perms []console.BucketPerm) map[string]gateway.Permission {
	m := map[string]gateway.Permission{}
	for _, p := range perms {
		switch {
		case p.Write:
			m[p.Bucket] = gateway.PermReadWrite
		case p.Read:
			m[p.Bucket] = gateway.PermRead
		}
	}
	return m
}

func (c consoleKeys) Create(ctx context.Context, spec console.KeySpec) (console.KeyInfo, error) {
	k, err := c.store.Create(ctx, gateway.AccessKey{Root: spec.Admin, Description: spec.Description, Buckets: bucketPerms(spec.Buckets)})
	if err != nil {
		return console.KeyInfo{}, err
	}
	info := keyInfo(*k)
	info.Secret = k.Secret // shown once
	return info, nil
}

func (c consoleKeys) SetBuckets(ctx context.Context, accessKey string, perms []console.BucketPerm) error {
	err := c.store.SetBuckets(ctx, accessKey, bucketPerms(perms))
	if errors.Is(err, gateway.ErrNoSuchAccessKey) {
		return console.ErrNoSuchKey
	}
	return err
}

func (c consoleKeys) Revoke(ctx context.Context, accessKey string) error {
	existed, err := c.store.Revoke(ctx, accessKey)
	if err == nil && !existed {
		return console.ErrNoSuchKey
	}
	return err
}
