package console

import (
	"context"
	"errors"
	"fmt"
	"time"
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

func nonNil(p []BucketPerm) []BucketPerm {
	if p == nil {
		return []BucketPerm{}
	}
	return p
}
