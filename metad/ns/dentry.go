package ns

import (
	"context"
	"strings"

	"github.com/flyfs/flyfs/core/kv"
)

// Name and path bounds (Linux NAME_MAX and PATH_MAX).
const (
	MaxNameLen = 255
	MaxPathLen = 4096
)

// Dentry is a directory entry's value. ReqID is the request that created the
// entry (create, mkdir, link, symlink, rename): a retry of that request that
// finds it knows it already succeeded.
type Dentry struct {
	Ino   uint64    `cbor:"1,keyasint,omitempty"`
	Type  InodeType `cbor:"2,keyasint,omitempty"`
	ReqID RequestID `cbor:"3,keyasint,omitempty"`
}

// DirEntry is one entry of a listing.
type DirEntry struct {
	Name string
	Ino  uint64
	Type InodeType
}

// checkName validates one path component.
func checkName(name string) error {
	switch {
	case len(name) > MaxNameLen:
		return fail(ErrNameTooLong, "name of %d bytes", len(name))
	case name == "" || name == "." || name == "..":
		return fail(ErrInvalid, "name %q", name)
	case strings.ContainsAny(name, "/\x00"):
		return fail(ErrInvalid, "name %q contains / or NUL", name)
	}
	return nil
}

func getDentry(ctx context.Context, r kv.ReadTxn, parent uint64, name string, snapshot bool) (*Dentry, bool, error) {
	key := dentryKey(parent, name)
	var v []byte
	var found bool
	var err error
	if snapshot {
		v, found, err = r.SnapshotGet(ctx, key)
	} else {
		v, found, err = r.Get(ctx, key)
	}
	if err != nil || !found {
		return nil, false, err
	}
	d := new(Dentry)
	if err := decode(v, d); err != nil {
		return nil, false, err
	}
	return d, true, nil
}

// dentry reads (parent, name) with conflict tracking: whether the name is taken
// decides the op, so a concurrent create or remove of it must abort us.
func (o *op) dentry(parent uint64, name string) (*Dentry, bool, error) {
	return getDentry(o.ctx, o.tx, parent, name, false)
}

func (o *op) putDentry(parent uint64, name string, d *Dentry) {
	o.tx.Set(dentryKey(parent, name), encode(d))
	o.touch(parent)
}

func (o *op) clearDentry(parent uint64, name string) {
	o.tx.Clear(dentryKey(parent, name))
	o.touch(parent)
}

// dirEmpty reads the first entry of dir with conflict tracking, so a concurrent
// insert aborts whoever relied on the directory being empty.
func (o *op) dirEmpty(dir uint64) (bool, error) {
	p := dentryPrefix(dir)
	res, err := o.tx.GetRange(o.ctx, p, prefixEnd(p), kv.RangeOptions{Limit: 1})
	if err != nil {
		return false, err
	}
	return len(res.KVs) == 0, nil
}
