// Package metaapi is metad's wire API: methods, messages and a typed client
// stub. Errors travel as rpc errors whose code is CodeErrno and whose message
// starts with the errno number, so clients get POSIX errnos back (Errno).
package metaapi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/rpc"
)

// Methods of the metadata service (service 4).
const (
	MethodStat        rpc.Method = 0x0401
	MethodLookup      rpc.Method = 0x0402
	MethodResolve     rpc.Method = 0x0403
	MethodCreate      rpc.Method = 0x0404
	MethodMkdir       rpc.Method = 0x0405
	MethodReadDir     rpc.Method = 0x0406
	MethodUnlink      rpc.Method = 0x0407
	MethodRmdir       rpc.Method = 0x0408
	MethodRename      rpc.Method = 0x0409
	MethodClose       rpc.Method = 0x040a
	MethodSetAttr     rpc.Method = 0x040b
	MethodSymlink     rpc.Method = 0x040c
	MethodLink        rpc.Method = 0x040d
	MethodReadlink    rpc.Method = 0x040e
	MethodReport      rpc.Method = 0x040f // a writer's length hint (also fsync)
	MethodMkdirAll    rpc.Method = 0x0410
	MethodRemoveAll   rpc.Method = 0x0411
	MethodOpen        rpc.Method = 0x0412
	MethodStatFS      rpc.Method = 0x0413
	MethodGetXattr    rpc.Method = 0x0414
	MethodSetXattr    rpc.Method = 0x0415
	MethodListXattr   rpc.Method = 0x0416
	MethodRemoveXattr rpc.Method = 0x0417
	MethodSetLayout   rpc.Method = 0x0418
	MethodGetLayout   rpc.Method = 0x0419
	MethodFsck        rpc.Method = 0x041b // check the whole namespace's consistency
	MethodMknod       rpc.Method = 0x041c // a fifo, socket or device
	// MethodSync makes every change acknowledged before it durable (a
	// relaxed request's changes are acknowledged before: rpc.FlagRelaxed).
	MethodSync rpc.Method = 0x0461
)

// Rename flags, with Linux's values.
const (
	RenameNoReplace uint32 = 1
	RenameExchange  uint32 = 2
)

// MaxFileSize is the largest file length: writes or truncates past it are
// EFBIG. 2^50 bytes keeps chunk indexes and offsets far from overflow.
const MaxFileSize = 1 << 50

// CodeErrno marks an error that carries a POSIX errno.
const CodeErrno = rpc.CodeServiceBase + 0x400

func init() { rpc.RegisterCode(CodeErrno, "Errno") }

// ErrnoError returns the wire error for errno e.
func ErrnoError(e syscall.Errno, detail string) error {
	return rpc.NewError(CodeErrno, fmt.Sprintf("%d %s: %s", int(e), e.Error(), detail))
}

// Errno extracts the errno of a wire error (0 if it carries none).
func Errno(err error) syscall.Errno {
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != CodeErrno {
		return 0
	}
	num, _, _ := strings.Cut(re.Message, " ")
	n, perr := strconv.Atoi(num)
	if perr != nil {
		return syscall.EIO
	}
	return syscall.Errno(n)
}

// Type of an inode.
type Type uint8

// Fifos, sockets and devices (special files) are inodes only: the kernel of
// whoever opens one carries its data, so they have no bytes in flyfs, no
// layout and no write opens (ENXIO); a device has its number in Rdev. Front
// ends without a kernel behind them (the S3 gateway) do not show them.
const (
	TypeFile     Type = 1
	TypeDir      Type = 2
	TypeSymlink  Type = 3
	TypeFifo     Type = 4
	TypeSocket   Type = 5
	TypeCharDev  Type = 6
	TypeBlockDev Type = 7
)

// Special reports whether t is a fifo, a socket or a device.
func (t Type) Special() bool { return t >= TypeFifo && t <= TypeBlockDev }

func (t Type) String() string {
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
	return "type " + strconv.Itoa(int(t))
}

// Inode is what clients see of an inode.
type Inode struct {
	ID          uint64        `cbor:"1,keyasint"`
	Type        Type          `cbor:"2,keyasint"`
	Mode        uint32        `cbor:"3,keyasint,omitempty"`
	UID         uint32        `cbor:"4,keyasint,omitempty"`
	GID         uint32        `cbor:"5,keyasint,omitempty"`
	Atime       int64         `cbor:"6,keyasint,omitempty"`
	Mtime       int64         `cbor:"7,keyasint,omitempty"`
	Ctime       int64         `cbor:"8,keyasint,omitempty"`
	Nlink       uint32        `cbor:"9,keyasint,omitempty"`
	Length      uint64        `cbor:"10,keyasint,omitempty"`
	TruncateVer uint64        `cbor:"11,keyasint,omitempty"`
	Layout      layout.Layout `cbor:"12,keyasint,omitempty"`
	Target      string        `cbor:"13,keyasint,omitempty"` // symlink
	Gen         uint64        `cbor:"14,keyasint,omitempty"` // grows on every data change
	Implicit    bool          `cbor:"15,keyasint,omitempty"` // a directory made by a nested S3 PUT
	StripeHint  uint32        `cbor:"16,keyasint,omitempty"` // chains that may hold chunks (length settling)
	// Rdev is a device's number in the 32-bit encoding FUSE carries
	// (Linux's new_encode_dev; glibc's makedev for majors below 4096).
	Rdev uint32 `cbor:"17,keyasint,omitempty"`
	// VersionID is the file's S3 version id as its key's current version
	// in a versioned bucket ("" is "null"); Versions counts the noncurrent
	// versions that are this file.
	VersionID string `cbor:"18,keyasint,omitempty"`
	Versions  uint32 `cbor:"19,keyasint,omitempty"`
	// Object lock: retained until RetainUntil (unix ns) in RetainMode, or
	// while LegalHold is on.
	RetainUntil int64      `cbor:"20,keyasint,omitempty"`
	RetainMode  RetainMode `cbor:"21,keyasint,omitempty"`
	LegalHold   bool       `cbor:"22,keyasint,omitempty"`
	// Shared data (core/layout's layers): the file's own chunks are those of
	// Data (0: ID), over the read-only Layers.
	Data   uint64         `cbor:"23,keyasint,omitempty"`
	Layers []layout.Layer `cbor:"24,keyasint,omitempty"`
	// Inline is a small file's whole data kept in its inode: its bytes are
	// Inline, then zeros up to Length, and it has no chunks.
	Inline []byte `cbor:"25,keyasint,omitempty"`
	// InlineOmitted: the file is inline but this answer leaves its bytes
	// out (only a read open and an inline close carry them); a reader opens
	// it to get them.
	InlineOmitted bool `cbor:"26,keyasint,omitempty"`
}

// DataID is the id whose chunks are the file's own.
func (in *Inode) DataID() uint64 {
	if in.Data != 0 {
		return in.Data
	}
	return in.ID
}

// RequestID makes a mutating request idempotent across retries.
type RequestID [16]byte

// InodeReq names an inode.
type InodeReq struct {
	Ino uint64 `cbor:"1,keyasint"`
}

// LookupReq names an entry of a directory.
type LookupReq struct {
	Parent uint64 `cbor:"1,keyasint"`
	Name   string `cbor:"2,keyasint"`
}

// ResolveReq names a path.
type ResolveReq struct {
	Path       string `cbor:"1,keyasint"`
	FollowLast bool   `cbor:"2,keyasint,omitempty"`
	// WithInline: when the path names a file whose data is inline, the
	// answer carries the bytes (read in the same snapshot), so a reader
	// needs no open to have them (an S3 GET).
	WithInline bool `cbor:"3,keyasint,omitempty"`
	// Xattr: the value of this extended attribute of the inode the path
	// names comes with the answer, from the same snapshot
	// (InodeResp.Xattr; an S3 GET's object record).
	Xattr string `cbor:"4,keyasint,omitempty"`
}

// InodeResp carries an inode.
type InodeResp struct {
	Inode Inode `cbor:"1,keyasint"`
	// Xattr and HasXattr: what a ResolveReq.Xattr asked for (HasXattr
	// false: the inode has no such attribute).
	Xattr    []byte `cbor:"2,keyasint,omitempty"`
	HasXattr bool   `cbor:"3,keyasint,omitempty"`
}

// CreateReq creates (or opens) a file.
type CreateReq struct {
	ReqID     RequestID `cbor:"1,keyasint"`
	Parent    uint64    `cbor:"2,keyasint"`
	Name      string    `cbor:"3,keyasint"`
	Mode      uint32    `cbor:"4,keyasint,omitempty"`
	Exclusive bool      `cbor:"5,keyasint,omitempty"`
	Truncate  bool      `cbor:"6,keyasint,omitempty"`
	Write     bool      `cbor:"7,keyasint,omitempty"`
	Client    uint64    `cbor:"8,keyasint,omitempty"`
	UID       uint32    `cbor:"9,keyasint,omitempty"`
	GID       uint32    `cbor:"10,keyasint,omitempty"`
	// Umask is the creator's, applied unless the parent has a default ACL.
	Umask uint32 `cbor:"11,keyasint,omitempty"`
}

// CreateResp returns the file and, for a write open, its session.
type CreateResp struct {
	Inode   Inode  `cbor:"1,keyasint"`
	Created bool   `cbor:"2,keyasint,omitempty"`
	Session []byte `cbor:"3,keyasint,omitempty"` // opaque session handle
}

// ChangeResp is Unlink's and Rename's answer: how they changed the
// directories they changed. Their mtime and ctime became at least DirTime
// (unix ns; 0: no directory changed, or not known), and with Subdirs a
// directory's count of subdirectories (its nlink) changed too. An answer
// without them (an older metad's) knows nothing.
type ChangeResp struct {
	DirTime int64 `cbor:"1,keyasint,omitempty"`
	Subdirs bool  `cbor:"2,keyasint,omitempty"`
}

// MkdirReq creates a directory.
type MkdirReq struct {
	ReqID  RequestID `cbor:"1,keyasint"`
	Parent uint64    `cbor:"2,keyasint"`
	Name   string    `cbor:"3,keyasint"`
	Mode   uint32    `cbor:"4,keyasint,omitempty"`
	UID    uint32    `cbor:"5,keyasint,omitempty"`
	GID    uint32    `cbor:"6,keyasint,omitempty"`
	Umask  uint32    `cbor:"7,keyasint,omitempty"` // as CreateReq's
}

// MkdirAllReq creates a path's missing directories in one transaction.
type MkdirAllReq struct {
	ReqID    RequestID `cbor:"1,keyasint"`
	Path     string    `cbor:"2,keyasint"`
	Mode     uint32    `cbor:"3,keyasint,omitempty"`
	UID      uint32    `cbor:"4,keyasint,omitempty"`
	GID      uint32    `cbor:"5,keyasint,omitempty"`
	Implicit bool      `cbor:"6,keyasint,omitempty"`
}

// SymlinkReq creates a symbolic link.
type SymlinkReq struct {
	ReqID  RequestID `cbor:"1,keyasint"`
	Parent uint64    `cbor:"2,keyasint"`
	Name   string    `cbor:"3,keyasint"`
	Target string    `cbor:"4,keyasint"`
	UID    uint32    `cbor:"5,keyasint,omitempty"`
	GID    uint32    `cbor:"6,keyasint,omitempty"`
}

// MknodReq creates a special file (Type is TypeFifo, TypeSocket,
// TypeCharDev or TypeBlockDev).
type MknodReq struct {
	ReqID  RequestID `cbor:"1,keyasint"`
	Parent uint64    `cbor:"2,keyasint"`
	Name   string    `cbor:"3,keyasint"`
	Type   Type      `cbor:"4,keyasint"`
	Mode   uint32    `cbor:"5,keyasint,omitempty"`
	Rdev   uint32    `cbor:"6,keyasint,omitempty"`
	UID    uint32    `cbor:"7,keyasint,omitempty"`
	GID    uint32    `cbor:"8,keyasint,omitempty"`
	Umask  uint32    `cbor:"9,keyasint,omitempty"` // as CreateReq's
}

// LinkReq creates a hard link.
type LinkReq struct {
	ReqID     RequestID `cbor:"1,keyasint"`
	Ino       uint64    `cbor:"2,keyasint"`
	NewParent uint64    `cbor:"3,keyasint"`
	NewName   string    `cbor:"4,keyasint"`
}

// ReadDirReq lists a page of a directory after a name.
type ReadDirReq struct {
	Dir   uint64 `cbor:"1,keyasint"`
	After string `cbor:"2,keyasint,omitempty"`
	Limit int    `cbor:"3,keyasint,omitempty"`
	Plus  bool   `cbor:"4,keyasint,omitempty"` // also return each entry's inode
	// Xattr, with Plus, also returns this extended attribute of each entry
	// (the S3 gateway's object record: a listing page is one call).
	Xattr string `cbor:"5,keyasint,omitempty"`
}

// DirEntry is one directory entry.
type DirEntry struct {
	Name string `cbor:"1,keyasint"`
	Ino  uint64 `cbor:"2,keyasint"`
	Type Type   `cbor:"3,keyasint"`
	// Inode is set by a ReadDir with Plus (nil if the entry vanished
	// between the listing and the inode read).
	Inode *Inode `cbor:"4,keyasint,omitempty"`
	// Xattr is the value of ReadDirReq.Xattr (nil: the entry has none).
	Xattr []byte `cbor:"5,keyasint,omitempty"`
}

// ReadDirResp is a page of entries.
type ReadDirResp struct {
	Entries []DirEntry `cbor:"1,keyasint"`
	More    bool       `cbor:"2,keyasint,omitempty"`
}

// RemoveReq removes an entry (unlink or rmdir).
type RemoveReq struct {
	ReqID  RequestID `cbor:"1,keyasint"`
	Parent uint64    `cbor:"2,keyasint"`
	Name   string    `cbor:"3,keyasint"`
	// IfIno/IfGen: remove only if the entry is still that inode at that
	// generation (else ECANCELED).
	IfIno uint64 `cbor:"4,keyasint,omitempty"`
	IfGen uint64 `cbor:"5,keyasint,omitempty"`
	// PruneImplicit also removes Implicit ancestors left empty.
	PruneImplicit bool `cbor:"6,keyasint,omitempty"`
}

// RenameReq moves an entry.
type RenameReq struct {
	ReqID     RequestID `cbor:"1,keyasint"`
	SrcParent uint64    `cbor:"2,keyasint"`
	SrcName   string    `cbor:"3,keyasint"`
	DstParent uint64    `cbor:"4,keyasint"`
	DstName   string    `cbor:"5,keyasint"`
	Flags     uint32    `cbor:"6,keyasint,omitempty"` // RENAME_NOREPLACE, RENAME_EXCHANGE
	// IfDstIno/IfDstGen: the destination must exist and be that inode at
	// that generation (else ECANCELED): compare-and-swap publishing.
	IfDstIno uint64 `cbor:"7,keyasint,omitempty"`
	IfDstGen uint64 `cbor:"8,keyasint,omitempty"`
	// PruneImplicit removes Implicit ancestors of the source left empty.
	PruneImplicit bool `cbor:"9,keyasint,omitempty"`
	// Lock puts the moved file under object lock as it takes its name
	// (into a bucket with versioning Enabled only).
	Lock *ObjectLock `cbor:"10,keyasint,omitempty"`
}

// CloseReq closes a write session with the writer's length hint.
type CloseReq struct {
	Session     []byte `cbor:"1,keyasint"`
	TruncateVer uint64 `cbor:"2,keyasint,omitempty"`
	Length      uint64 `cbor:"3,keyasint,omitempty"`
	Wrote       bool   `cbor:"4,keyasint,omitempty"` // data changed: Gen moves
	// Exact: every write made through the session was acknowledged and
	// lies within Length, so metad need not ask storage for the length. A
	// write that failed may still have landed past it: then Exact is false
	// and the last close settles the length from storage.
	Exact bool `cbor:"5,keyasint,omitempty"`
	// Inline is the file's whole data, written through this session alone
	// and never sent to storage: metad keeps it in the inode, or refuses
	// with EAGAIN and leaves the session open, and the writer writes the
	// data to chunks and closes again.
	Inline []byte `cbor:"6,keyasint,omitempty"`
}

// ReportReq is a writer's periodic length hint.
type ReportReq struct {
	Ino         uint64 `cbor:"1,keyasint"`
	TruncateVer uint64 `cbor:"2,keyasint,omitempty"`
	Length      uint64 `cbor:"3,keyasint"`
	Wrote       bool   `cbor:"4,keyasint,omitempty"`
}

// OpenReq opens an existing inode with open(2) flags; write opens get a
// session. KnownGen: the caller holds the bytes of the inline file at this
// generation (it wrote or read them); a read open of the file still at it
// answers without them (InlineOmitted), sparing the read of the bytes.
type OpenReq struct {
	Ino      uint64 `cbor:"1,keyasint"`
	Flags    int    `cbor:"2,keyasint,omitempty"`
	Client   uint64 `cbor:"3,keyasint,omitempty"`
	KnownGen uint64 `cbor:"4,keyasint,omitempty"`
}

// OpenResp is CreateResp without Created.
type OpenResp = CreateResp

// The SetAttr mask bits.
const (
	SetMode uint32 = 1 << iota
	SetUID
	SetGID
	SetAtime
	SetMtime
	SetSize
	SetStripeHint
	SetImplicit
	// IfGenIs makes the change conditional: the inode must be at generation
	// Gen, else ECANCELED (a writer telling its own changes from others').
	IfGenIs
)

// SetAttrReq changes the attributes in Mask.
type SetAttrReq struct {
	Ino        uint64 `cbor:"1,keyasint"`
	Mask       uint32 `cbor:"2,keyasint"`
	Mode       uint32 `cbor:"3,keyasint,omitempty"`
	UID        uint32 `cbor:"4,keyasint,omitempty"`
	GID        uint32 `cbor:"5,keyasint,omitempty"`
	Atime      int64  `cbor:"6,keyasint,omitempty"`
	Mtime      int64  `cbor:"7,keyasint,omitempty"`
	Size       uint64 `cbor:"8,keyasint,omitempty"`
	Implicit   bool   `cbor:"9,keyasint,omitempty"`
	StripeHint uint32 `cbor:"10,keyasint,omitempty"`
	Gen        uint64 `cbor:"11,keyasint,omitempty"` // with IfGenIs
}

// StatFSResp is the namespace's usage.
type StatFSResp struct {
	Inodes  int64 `cbor:"1,keyasint"`
	Bytes   int64 `cbor:"2,keyasint"`
	GCQueue int64 `cbor:"3,keyasint,omitempty"` // removed files waiting for GC
	// GCBytes: the bytes of those files (counted in Bytes until collected).
	GCBytes uint64 `cbor:"4,keyasint,omitempty"`
	// GCDue and GCDueBytes: of those, the ones past their grace period,
	// which the next collection takes; GCGraceSec is the answering metad's
	// grace period (--gc-grace) in seconds.
	GCDue      int64  `cbor:"5,keyasint,omitempty"`
	GCDueBytes uint64 `cbor:"6,keyasint,omitempty"`
	GCGraceSec int64  `cbor:"7,keyasint,omitempty"`
}

// XattrReq names an extended attribute (and, for set, its value).
type XattrReq struct {
	Ino   uint64 `cbor:"1,keyasint"`
	Name  string `cbor:"2,keyasint,omitempty"`
	Value []byte `cbor:"3,keyasint,omitempty"`
	Flags int    `cbor:"4,keyasint,omitempty"` // XATTR_CREATE=1, XATTR_REPLACE=2
}

// XattrResp carries a value or a list of names.
type XattrResp struct {
	Value []byte   `cbor:"1,keyasint,omitempty"`
	Names []string `cbor:"2,keyasint,omitempty"`
}

// LayoutReq reads or sets a directory's default layout.
type LayoutReq struct {
	Ino    uint64        `cbor:"1,keyasint"`
	Layout layout.Layout `cbor:"2,keyasint,omitempty"`
}

// Empty is a response with nothing in it.
type Empty struct{}

// Client is a typed stub over an rpc.Client for one metad address.
type Client struct {
	RPC  *rpc.Client
	Addr string
}

func call[Req, Resp any](ctx context.Context, c Client, m rpc.Method, req *Req) (*Resp, error) {
	resp, _, err := rpc.Call[Req, Resp](ctx, c.RPC, c.Addr, m, req, nil)
	return resp, err
}

func (c Client) Stat(ctx context.Context, ino uint64) (*InodeResp, error) {
	return call[InodeReq, InodeResp](ctx, c, MethodStat, &InodeReq{Ino: ino})
}
func (c Client) Lookup(ctx context.Context, req *LookupReq) (*InodeResp, error) {
	return call[LookupReq, InodeResp](ctx, c, MethodLookup, req)
}
func (c Client) Resolve(ctx context.Context, req *ResolveReq) (*InodeResp, error) {
	return call[ResolveReq, InodeResp](ctx, c, MethodResolve, req)
}
func (c Client) Create(ctx context.Context, req *CreateReq) (*CreateResp, error) {
	return call[CreateReq, CreateResp](ctx, c, MethodCreate, req)
}
func (c Client) Mkdir(ctx context.Context, req *MkdirReq) (*InodeResp, error) {
	return call[MkdirReq, InodeResp](ctx, c, MethodMkdir, req)
}
func (c Client) Symlink(ctx context.Context, req *SymlinkReq) (*InodeResp, error) {
	return call[SymlinkReq, InodeResp](ctx, c, MethodSymlink, req)
}
func (c Client) Mknod(ctx context.Context, req *MknodReq) (*InodeResp, error) {
	return call[MknodReq, InodeResp](ctx, c, MethodMknod, req)
}
func (c Client) Link(ctx context.Context, req *LinkReq) (*InodeResp, error) {
	return call[LinkReq, InodeResp](ctx, c, MethodLink, req)
}
func (c Client) Readlink(ctx context.Context, ino uint64) (*InodeResp, error) {
	return call[InodeReq, InodeResp](ctx, c, MethodReadlink, &InodeReq{Ino: ino})
}
func (c Client) ReadDir(ctx context.Context, req *ReadDirReq) (*ReadDirResp, error) {
	return call[ReadDirReq, ReadDirResp](ctx, c, MethodReadDir, req)
}
func (c Client) Unlink(ctx context.Context, req *RemoveReq) (*ChangeResp, error) {
	return call[RemoveReq, ChangeResp](ctx, c, MethodUnlink, req)
}
func (c Client) Rmdir(ctx context.Context, req *RemoveReq) error {
	_, err := call[RemoveReq, Empty](ctx, c, MethodRmdir, req)
	return err
}
func (c Client) Rename(ctx context.Context, req *RenameReq) (*ChangeResp, error) {
	return call[RenameReq, ChangeResp](ctx, c, MethodRename, req)
}
func (c Client) Close(ctx context.Context, req *CloseReq) (*InodeResp, error) {
	return call[CloseReq, InodeResp](ctx, c, MethodClose, req)
}
func (c Client) Report(ctx context.Context, req *ReportReq) (*InodeResp, error) {
	return call[ReportReq, InodeResp](ctx, c, MethodReport, req)
}
func (c Client) MkdirAll(ctx context.Context, req *MkdirAllReq) (*InodeResp, error) {
	return call[MkdirAllReq, InodeResp](ctx, c, MethodMkdirAll, req)
}
func (c Client) RemoveAll(ctx context.Context, req *RemoveReq) error {
	_, err := call[RemoveReq, Empty](ctx, c, MethodRemoveAll, req)
	return err
}
func (c Client) Open(ctx context.Context, req *OpenReq) (*OpenResp, error) {
	return call[OpenReq, OpenResp](ctx, c, MethodOpen, req)
}
func (c Client) SetAttr(ctx context.Context, req *SetAttrReq) (*InodeResp, error) {
	return call[SetAttrReq, InodeResp](ctx, c, MethodSetAttr, req)
}
func (c Client) StatFS(ctx context.Context) (*StatFSResp, error) {
	return call[Empty, StatFSResp](ctx, c, MethodStatFS, &Empty{})
}
func (c Client) Sync(ctx context.Context) error {
	_, err := call[Empty, Empty](ctx, c, MethodSync, &Empty{})
	return err
}
func (c Client) GetXattr(ctx context.Context, req *XattrReq) (*XattrResp, error) {
	return call[XattrReq, XattrResp](ctx, c, MethodGetXattr, req)
}
func (c Client) SetXattr(ctx context.Context, req *XattrReq) error {
	_, err := call[XattrReq, Empty](ctx, c, MethodSetXattr, req)
	return err
}
func (c Client) ListXattr(ctx context.Context, req *XattrReq) (*XattrResp, error) {
	return call[XattrReq, XattrResp](ctx, c, MethodListXattr, req)
}
func (c Client) RemoveXattr(ctx context.Context, req *XattrReq) error {
	_, err := call[XattrReq, Empty](ctx, c, MethodRemoveXattr, req)
	return err
}
func (c Client) SetLayout(ctx context.Context, req *LayoutReq) error {
	_, err := call[LayoutReq, Empty](ctx, c, MethodSetLayout, req)
	return err
}
func (c Client) GetLayout(ctx context.Context, ino uint64) (*LayoutReq, error) {
	return call[InodeReq, LayoutReq](ctx, c, MethodGetLayout, &InodeReq{Ino: ino})
}

// FsckResp is the outcome of a namespace check.
type FsckResp struct {
	Inodes   int      `cbor:"1,keyasint"`
	Dirs     int      `cbor:"2,keyasint"`
	Files    int      `cbor:"3,keyasint"`
	Symlinks int      `cbor:"4,keyasint"`
	Dentries int      `cbor:"5,keyasint"`
	GCQueued int      `cbor:"6,keyasint"`
	Sessions int      `cbor:"7,keyasint"`
	Problems []string `cbor:"8,keyasint,omitempty"`
	Summary  string   `cbor:"9,keyasint"`
	Specials int      `cbor:"10,keyasint,omitempty"` // fifos, sockets, devices
}

func (c Client) Fsck(ctx context.Context) (*FsckResp, error) {
	return call[Empty, FsckResp](ctx, c, MethodFsck, &Empty{})
}
