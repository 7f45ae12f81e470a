package ns

import (
	"context"
	"github.com/flyfs/flyfs/core/layout"
	"syscall"

	"github.com/flyfs/flyfs/core/kv"
)

// InodeType is what an inode is.
type InodeType uint8

// The inode types. Fifos, sockets and devices ("special files") are inodes
// only: the kernel carries their data, so they have no layout, no length
// and no write sessions; a device has its number in Rdev.
const (
	TypeFile     InodeType = 1
	TypeDir      InodeType = 2
	TypeSymlink  InodeType = 3
	TypeFifo     InodeType = 4
	TypeSocket   InodeType = 5
	TypeCharDev  InodeType = 6
	TypeBlockDev InodeType = 7
)

func (t InodeType) String() string {
	switch t {
	case TypeFile:
		return "file"
	case TypeDir:
		return "dir"
	case TypeSymlink:
		return "symlink"
	case TypeFifo:
		return "fifo"
	case TypeSocket:
		return "socket"
	case TypeCharDev:
		return "character device"
	case TypeBlockDev:
		return "block device"
	}
	return "type?"
}

// Special reports whether t is a fifo, a socket or a device.
func (t InodeType) Special() bool { return t >= TypeFifo && t <= TypeBlockDev }

// Device reports whether t is a character or block device (it has an Rdev).
func (t InodeType) Device() bool { return t == TypeCharDev || t == TypeBlockDev }

// Layout says where a file's chunks live. The namespace stores it opaquely
// (core/layout interprets it): files get the one given at create, or their
// directory's default, optionally completed by Options.NewFileLayout.
type Layout = layout.Layout

// Inode is an inode's value. Times are unix nanoseconds. Mode holds only the
// permission bits (07777); the type is Type.
type Inode struct {
	ID    uint64    `cbor:"1,keyasint,omitempty"`
	Type  InodeType `cbor:"2,keyasint,omitempty"`
	Mode  uint32    `cbor:"3,keyasint,omitempty"`
	UID   uint32    `cbor:"4,keyasint,omitempty"`
	GID   uint32    `cbor:"5,keyasint,omitempty"`
	Atime int64     `cbor:"6,keyasint,omitempty"`
	Mtime int64     `cbor:"7,keyasint,omitempty"`
	Ctime int64     `cbor:"8,keyasint,omitempty"`
	Nlink uint32    `cbor:"9,keyasint,omitempty"`

	// File. Length is the length hint protocol's value; TruncateVer grows on
	// every shrink, so stale hints (of an older version) are ignored.
	Length      uint64 `cbor:"10,keyasint,omitempty"`
	TruncateVer uint64 `cbor:"11,keyasint,omitempty"`
	Layout      Layout `cbor:"12,keyasint,omitempty"`
	StripeHint  uint32 `cbor:"13,keyasint,omitempty"` // chains that may hold chunks (starts at 16, doubles)

	// Directory: Parent and Name name its one dentry (for path reconstruction
	// and the rename loop check); DefaultLayout is inherited by new children.
	Parent        uint64  `cbor:"14,keyasint,omitempty"`
	Name          string  `cbor:"15,keyasint,omitempty"`
	DefaultLayout *Layout `cbor:"16,keyasint,omitempty"`

	// Symlink.
	Target string `cbor:"17,keyasint,omitempty"`

	// Gen grows on every change of a file's data (a write session that wrote
	// closes or syncs, a size change), so front ends can tell versions apart
	// (S3 ETags, If-Match) without reading the data.
	Gen uint64 `cbor:"18,keyasint,omitempty"`
	// Implicit marks a directory made as a side effect (an S3 PUT of a nested
	// key) rather than asked for; only such directories are pruned when they
	// empty (RemoveRequest.PruneImplicit).
	Implicit bool `cbor:"19,keyasint,omitempty"`

	// Rdev is a device's number, in the 32-bit encoding FUSE carries
	// (Linux's new_encode_dev: minor's low byte, major, the rest of minor).
	Rdev uint32 `cbor:"20,keyasint,omitempty"`
	// CountsSubdirs: a directory whose subdirectories are counted (every one
	// made since the count exists, see dirattr.go), so Stat reports nlink 2
	// plus them; an older directory reports 1.
	CountsSubdirs bool `cbor:"21,keyasint,omitempty"`

	// VersionID is the S3 version id of the file as the current version of
	// its key in a versioned bucket; empty is the version "null".
	VersionID string `cbor:"22,keyasint,omitempty"`
	// Versions counts the version records (VERS) naming this file: a file
	// with no links is kept while any names it (versions.go).
	Versions uint32 `cbor:"23,keyasint,omitempty"`

	// Object lock (objectlock.go): the file may not change or be removed
	// for good until RetainUntil (unix ns) under RetainMode, nor while
	// LegalHold is set.
	RetainUntil int64      `cbor:"24,keyasint,omitempty"`
	RetainMode  RetainMode `cbor:"25,keyasint,omitempty"`
	LegalHold   bool       `cbor:"26,keyasint,omitempty"`

	// Shared data (clone.go, core/layout's layers): Data is the id whose
	// chunks are the file's own (0: ID); Layers are the read-only layers
	// beneath them, each a LAYR record counting the files reading through
	// it. OwnClean says the file owns no chunks yet (a clone not opened for
	// writing nor truncated since), so cloning it again freezes nothing.
	Data     uint64         `cbor:"27,keyasint,omitempty"`
	Layers   []layout.Layer `cbor:"28,keyasint,omitempty"`
	OwnClean bool           `cbor:"29,keyasint,omitempty"`

	// ReadOnly: part of a snapshot (snapshot.go). Nothing changes, links,
	// moves or removes it but the deletion of its snapshot.
	ReadOnly bool `cbor:"30,keyasint,omitempty"`

	// InlineLen > 0: a small file whose data is kept beside its inode (the
	// INLN key, inline.go) instead of in chunks: the first InlineLen bytes
	// of that value, then zeros up to Length.
	InlineLen uint32 `cbor:"31,keyasint,omitempty"`
	// Inline is that data where an answer carries it (Open, an inline
	// Close); it is not part of the stored value.
	Inline []byte `cbor:"-"`
}

// DataID is the id whose chunks are the file's own.
func (in *Inode) DataID() uint64 {
	if in.Data != 0 {
		return in.Data
	}
	return in.ID
}

// IsDir reports whether the inode is a directory.
func (in *Inode) IsDir() bool { return in.Type == TypeDir }

// StatMode is the st_mode value: type bits and permission bits.
func (in *Inode) StatMode() uint32 {
	m := in.Mode & 07777
	switch in.Type {
	case TypeDir:
		m |= syscall.S_IFDIR
	case TypeSymlink:
		m |= syscall.S_IFLNK
	case TypeFifo:
		m |= syscall.S_IFIFO
	case TypeSocket:
		m |= syscall.S_IFSOCK
	case TypeCharDev:
		m |= syscall.S_IFCHR
	case TypeBlockDev:
		m |= syscall.S_IFBLK
	default:
		m |= syscall.S_IFREG
	}
	return m
}

// initialStripeHint is the design's chain-count hint for a new file: 16 chains,
// or the whole stripe when it is narrower.
func initialStripeHint(l Layout) uint32 {
	if l.Stripe == 0 {
		return 0
	}
	return min(16, l.Stripe)
}

// getInode reads an inode; snapshot reads add no conflict.
func getInode(ctx context.Context, r kv.ReadTxn, ino uint64, snapshot bool) (*Inode, error) {
	key := inodeKey(ino)
	var v []byte
	var found bool
	var err error
	if snapshot {
		v, found, err = r.SnapshotGet(ctx, key)
	} else {
		v, found, err = r.Get(ctx, key)
	}
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fail(ErrNotExist, "inode %d", ino)
	}
	in := new(Inode)
	if err := decode(v, in); err != nil {
		return nil, err
	}
	return in, nil
}

// liveDir reads ino with conflict tracking and checks it is a live directory:
// the check every op that adds an entry to a directory makes.
func (o *op) liveDir(ino uint64) (*Inode, error) {
	in, err := o.inode(ino)
	if err != nil {
		return nil, err
	}
	if in.Type != TypeDir {
		return nil, fail(ErrNotDir, "inode %d", ino)
	}
	if in.Nlink == 0 {
		return nil, fail(ErrNotExist, "directory %d was removed", ino)
	}
	if err := o.writable(in); err != nil {
		return nil, err
	}
	return in, nil
}

// writable refuses changes to an inode of a snapshot.
func (o *op) writable(in *Inode) error {
	if in.ReadOnly && !o.snapshotting {
		return fail(ErrReadOnly, "%s %d is part of a snapshot", in.Type, in.ID)
	}
	return nil
}

// inode reads ino with conflict tracking: the op's outcome depends on it.
func (o *op) inode(ino uint64) (*Inode, error) { return getInode(o.ctx, o.tx, ino, false) }

func (o *op) putInode(in *Inode) { o.tx.Set(inodeKey(in.ID), encode(in)) }

// createInode writes a new inode and counts it.
func (o *op) createInode(in *Inode) {
	o.putInode(in)
	o.dInodes++
	o.dBytes += int64(in.Length)
}

// deleteInode removes an inode and everything keyed by it (xattrs, a
// directory's attributes); the caller removed its dentries and checked it has
// no sessions.
func (o *op) deleteInode(in *Inode) {
	o.tx.Clear(inodeKey(in.ID))
	if in.InlineLen > 0 {
		o.tx.Clear(inlineKey(in.ID))
	}
	p := xattrPrefix(in.ID)
	o.tx.ClearRange(p, prefixEnd(p))
	o.tx.Clear(lockKey(in.ID, LockPOSIX))
	o.tx.Clear(lockKey(in.ID, LockFlock))
	if in.Type == TypeDir {
		o.clearDirAttrs(in.ID)
		delete(o.dirs, in.ID)
	}
	o.dInodes--
	o.dBytes -= int64(in.Length)
}

// setLength changes a file's length and counts the bytes.
func (o *op) setLength(in *Inode, length uint64) {
	o.dBytes += int64(length) - int64(in.Length)
	in.Length = length
}
