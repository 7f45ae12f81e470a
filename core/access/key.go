package access

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"time"
)

// Permission of a key on a bucket.
type Permission string

const (
	Read      Permission = "read"
	ReadWrite Permission = "readwrite"
)

// Key is one access key and what it may do.
type Key struct {
	ID     string `json:"id" cbor:"1,keyasint"`
	Secret string `json:"secret" cbor:"2,keyasint,omitempty"`
	// UID/GID own the files and directories this key creates.
	UID uint32 `json:"uid" cbor:"3,keyasint,omitempty"`
	GID uint32 `json:"gid" cbor:"4,keyasint,omitempty"`
	// Buckets maps a bucket name (or "*" for every bucket) to a permission.
	Buckets     map[string]Permission `json:"buckets,omitempty" cbor:"5,keyasint,omitempty"`
	Root        bool                  `json:"root,omitempty" cbor:"6,keyasint,omitempty"`
	Description string                `json:"description,omitempty" cbor:"7,keyasint,omitempty"`
	Created     time.Time             `json:"created" cbor:"8,keyasint"`
}

// Allows says whether the key may do an operation needing need on bucket;
// bucket "" is a service-level operation such as CreateBucket, which needs
// a grant on "*".
func (k *Key) Allows(bucket string, need Permission) bool {
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
	return need == Read || p == ReadWrite
}

// SeesBucket says whether a bucket listing shows bucket to this key.
func (k *Key) SeesBucket(bucket string) bool { return k.Allows(bucket, Read) }

// Matches says whether secret is the key's secret, in time independent of
// where they differ.
func (k *Key) Matches(secret string) bool {
	return subtle.ConstantTimeCompare([]byte(k.Secret), []byte(secret)) == 1
}

// Public is the key without its secret, as listings show it.
func (k Key) Public() Key {
	k.Secret = ""
	return k
}

var (
	// ErrNoSuchKey: the key does not exist (or was revoked).
	ErrNoSuchKey = errors.New("no such access key")
	// ErrKeyExists: a key with this id exists already.
	ErrKeyExists = errors.New("an access key with this id exists")
	// ErrLastRoot: revoking the only root key is refused; without one
	// nobody could administer the cluster.
	ErrLastRoot = errors.New("the last root access key cannot be revoked: create another root (admin) key first")
	// ErrInvalid: a key or its grants are malformed (an *InvalidError
	// says how).
	ErrInvalid = errors.New("invalid access key")
)

// InvalidError says what is wrong with a key; it matches ErrInvalid.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string        { return e.Msg }
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}
