package ns

import (
	"bytes"
	"context"
	"fmt"

	"github.com/flyfs/flyfs/core/kv"
)

// setxattr flags.
const (
	XattrCreate  = 1 // fail with EEXIST if the attribute exists
	XattrReplace = 2 // fail with ENODATA if it does not
)

// Xattr bounds (Linux's XATTR_NAME_MAX and XATTR_SIZE_MAX).
const (
	MaxXattrName  = 255
	MaxXattrValue = 64 << 10
)

// Xattrs live in their own keys (XATR ino name), not in the inode value: a
// large attribute does not slow every stat, and listing is one range read.

func checkXattrName(name string) error {
	switch {
	case name == "":
		return fail(ErrInvalid, "empty xattr name")
	case len(name) > MaxXattrName:
		return fail(ErrNameTooLong, "xattr name of %d bytes", len(name))
	}
	return nil
}

// GetXattr returns an extended attribute (ENODATA if missing).
func (n *Namespace) GetXattr(ctx context.Context, ino uint64, name string) ([]byte, error) {
	if err := checkXattrName(name); err != nil {
		return nil, err
	}
	var val []byte
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		if _, err := getInode(ctx, tx, ino, true); err != nil {
			return err
		}
		v, found, err := tx.SnapshotGet(ctx, xattrKey(ino, name))
		if err != nil {
			return err
		}
		if !found {
			return fail(ErrNoData, "xattr %q of %d", name, ino)
		}
		val = v
		return nil
	})
	return val, err
}

// SetXattr sets an extended attribute; flags XattrCreate / XattrReplace as in
// setxattr(2). A retry of a create that finds the attribute holding exactly
// its value counts as success.
func (n *Namespace) SetXattr(ctx context.Context, ino uint64, name string, value []byte, flags int) error {
	if err := checkXattrName(name); err != nil {
		return err
	}
	if len(value) > MaxXattrValue {
		return fail(ErrTooBig, "xattr value of %d bytes", len(value))
	}
	if flags&^(XattrCreate|XattrReplace) != 0 || flags == XattrCreate|XattrReplace {
		return fail(ErrInvalid, "setxattr flags %#x", flags)
	}
	err := n.update(ctx, func(o *op) error {
		in, err := o.inode(ino)
		if err != nil {
			return err
		}
		if err := o.writable(in); err != nil {
			return err
		}
		if _, err := checkACLXattr(in, name, value); err != nil {
			return err
		}
		key := xattrKey(ino, name)
		old, found, err := o.tx.Get(o.ctx, key)
		if err != nil {
			return err
		}
		switch {
		case flags == XattrCreate && found && !bytes.Equal(old, value):
			return fail(ErrExist, "xattr %q of %d", name, ino)
		case flags == XattrReplace && !found:
			return fail(ErrNoData, "xattr %q of %d", name, ino)
		}
		o.tx.Set(key, value)
		in.Ctime = o.now
		o.putInode(in)
		return nil
	})
	if err != nil {
		return fmt.Errorf("setxattr %q: %w", name, err)
	}
	return nil
}

// ListXattr returns the names of an inode's extended attributes, sorted.
func (n *Namespace) ListXattr(ctx context.Context, ino uint64) ([]string, error) {
	var names []string
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		names = nil
		if _, err := getInode(ctx, tx, ino, true); err != nil {
			return err
		}
		p := xattrPrefix(ino)
		return scan(ctx, tx, p, prefixEnd(p), func(k, _ []byte) error {
			names = append(names, string(k[len(p):]))
			return nil
		})
	})
	return names, err
}

// RemoveXattr removes an extended attribute (ENODATA if missing). It records
// its result under a per-call request id so that the KV retry loop after a
// maybe-committed commit does not turn success into ENODATA.
func (n *Namespace) RemoveXattr(ctx context.Context, ino uint64, name string) error {
	if err := checkXattrName(name); err != nil {
		return err
	}
	err := n.updateIdem(ctx, NewRequestID(), opRemoveXattr, func(o *op) error {
		in, err := o.inode(ino)
		if err != nil {
			return err
		}
		if err := o.writable(in); err != nil {
			return err
		}
		key := xattrKey(ino, name)
		_, found, err := o.tx.Get(o.ctx, key)
		if err != nil {
			return err
		}
		if !found {
			return fail(ErrNoData, "xattr %q of %d", name, ino)
		}
		o.tx.Clear(key)
		in.Ctime = o.now
		o.putInode(in)
		return nil
	})
	if err != nil {
		return fmt.Errorf("removexattr %q: %w", name, err)
	}
	return nil
}
