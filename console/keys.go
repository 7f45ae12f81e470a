package console

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/flyfs/flyfs/core/access"
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

// KeyInfo is a stored access key as the API shows it. Secret is set only in
// the answer to a create: it is shown once and never again.
type KeyInfo struct {
	AccessKey   string       `json:"accessKey"`
	Secret      string       `json:"secret,omitempty"`
	Description string       `json:"description"`
	Admin       bool         `json:"admin"`
	Buckets     []BucketPerm `json:"buckets"`
	Created     time.Time    `json:"created"`
}

// errBadCredentials: unknown access key or wrong secret (one error for
// both, so a caller cannot probe which keys exist).
var errBadCredentials = errors.New("console: access key or secret key is wrong")

// keyInfo is the API's view of a key (secret left out).
func keyInfo(k access.Key) KeyInfo {
	info := KeyInfo{AccessKey: k.ID, Description: k.Description, Admin: k.Root, Created: k.Created, Buckets: []BucketPerm{}}
	for b, p := range k.Buckets {
		info.Buckets = append(info.Buckets, BucketPerm{Bucket: b, Read: true, Write: p == access.ReadWrite})
	}
	sort.Slice(info.Buckets, func(i, j int) bool { return info.Buckets[i].Bucket < info.Buckets[j].Bucket })
	return info
}

// grants turns the API's permissions into a key's, checking them: a bucket
// name S3 would accept (or "*"), each at most once, granting something.
func grants(perms []BucketPerm) (map[string]access.Permission, error) {
	m := map[string]access.Permission{}
	for _, p := range perms {
		if p.Bucket != "*" && !access.ValidBucketName(p.Bucket) {
			return nil, fmt.Errorf("bucket name %q: use 3 to 63 lower-case letters, digits, '.' and '-' (a letter or digit first and last)", p.Bucket)
		}
		if _, dup := m[p.Bucket]; dup {
			return nil, fmt.Errorf("bucket %q is listed twice", p.Bucket)
		}
		switch {
		case p.Write:
			m[p.Bucket] = access.ReadWrite
		case p.Read:
			m[p.Bucket] = access.Read
		default:
			return nil, fmt.Errorf("bucket %q: grant read, write or both (or leave it out)", p.Bucket)
		}
	}
	return m, nil
}

func nonNil(p []BucketPerm) []BucketPerm {
	if p == nil {
		return []BucketPerm{}
	}
	return p
}
