package metaapi

import (
	"context"

	"github.com/flyfs/flyfs/core/rpc"
)

// Versioned buckets (metad/ns/versions.go): a bucket's versioning state,
// and the noncurrent versions and delete markers of its keys.
const (
	MethodSetVersioning rpc.Method = 0x0450
	MethodGetVersioning rpc.Method = 0x0451
	MethodListVersions  rpc.Method = 0x0452 // a page of a bucket's records
	MethodGetVersion    rpc.Method = 0x0453 // one record by id
	MethodDeleteKey     rpc.Method = 0x0454 // S3 DELETE without a version: a delete marker
	MethodDeleteVersion rpc.Method = 0x0455 // S3 DELETE of one version, for good
)

func init() {
	rpc.RegisterMethod(MethodSetVersioning, "metad.SetVersioning")
	rpc.RegisterMethod(MethodGetVersioning, "metad.GetVersioning")
	rpc.RegisterMethod(MethodListVersions, "metad.ListVersions")
	rpc.RegisterMethod(MethodGetVersion, "metad.GetVersion")
	rpc.RegisterMethod(MethodDeleteKey, "metad.DeleteKey")
	rpc.RegisterMethod(MethodDeleteVersion, "metad.DeleteVersion")
}

// Versioning is a bucket's versioning state.
type Versioning uint8

// The states, as the namespace stores them.
const (
	Unversioned         Versioning = 0
	VersioningEnabled   Versioning = 1
	VersioningSuspended Versioning = 2
)

// NullVersion is the id of the version made while a bucket was not Enabled.
const NullVersion = "null"

// MaxListVersions bounds one ListVersions page.
const MaxListVersions = 1000

// VersioningReq names a bucket (its directory's inode) and, to set, a state.
type VersioningReq struct {
	Bucket uint64     `cbor:"1,keyasint"`
	State  Versioning `cbor:"2,keyasint,omitempty"`
}

// VersioningResp is a bucket's state.
type VersioningResp struct {
	State Versioning `cbor:"1,keyasint,omitempty"`
}

// ListVersionsReq pages through a bucket's records: keys in byte order,
// each key's newest first; After resumes past AfterKey's records with a
// seq of AfterSeq or more (AfterSeq 0: past all of AfterKey's).
type ListVersionsReq struct {
	Bucket    uint64 `cbor:"1,keyasint"`
	Prefix    string `cbor:"2,keyasint,omitempty"`
	Delimiter string `cbor:"3,keyasint,omitempty"`
	AfterKey  string `cbor:"4,keyasint,omitempty"`
	AfterSeq  uint64 `cbor:"5,keyasint,omitempty"`
	Limit     int    `cbor:"6,keyasint,omitempty"`
}

// VersionEntry is one record (a noncurrent version, with its file's
// inode, or a delete marker) or a common prefix.
type VersionEntry struct {
	Key          string `cbor:"1,keyasint"`
	Seq          uint64 `cbor:"2,keyasint,omitempty"`
	ID           string `cbor:"3,keyasint,omitempty"`
	Time         int64  `cbor:"4,keyasint,omitempty"` // when it stopped being current, or the marker was made
	DeleteMarker bool   `cbor:"5,keyasint,omitempty"`
	Inode        *Inode `cbor:"6,keyasint,omitempty"`
	Prefix       bool   `cbor:"7,keyasint,omitempty"`
}

// ListVersionsResp is a page; More says whether records follow.
type ListVersionsResp struct {
	Entries []VersionEntry `cbor:"1,keyasint,omitempty"`
	More    bool           `cbor:"2,keyasint,omitempty"`
}

// VersionReq names one version of a key.
type VersionReq struct {
	Bucket uint64 `cbor:"1,keyasint"`
	Key    string `cbor:"2,keyasint"`
	ID     string `cbor:"3,keyasint"`
}

// DeleteKeyReq is an S3 DELETE without a version id in a versioned bucket.
type DeleteKeyReq struct {
	ReqID         RequestID `cbor:"1,keyasint"`
	Bucket        uint64    `cbor:"2,keyasint"`
	Key           string    `cbor:"3,keyasint"`
	PruneImplicit bool      `cbor:"4,keyasint,omitempty"`
	// IfIno and IfGen, when set: the current version must be this file at
	// this generation (S3 If-Match), else ECANCELED.
	IfIno uint64 `cbor:"5,keyasint,omitempty"`
	IfGen uint64 `cbor:"6,keyasint,omitempty"`
}

// DeleteKeyResp is the new delete marker's id.
type DeleteKeyResp struct {
	Marker string `cbor:"1,keyasint"`
}

// DeleteVersionReq deletes one version for good.
type DeleteVersionReq struct {
	ReqID         RequestID `cbor:"1,keyasint"`
	Bucket        uint64    `cbor:"2,keyasint"`
	Key           string    `cbor:"3,keyasint"`
	ID            string    `cbor:"4,keyasint"`
	PruneImplicit bool      `cbor:"5,keyasint,omitempty"`
	// BypassGovernance removes a version under governance retention.
	BypassGovernance bool `cbor:"6,keyasint,omitempty"`
}

// DeleteVersionResp says what went: a delete marker or an object version,
// and which older version became current, if one did.
type DeleteVersionResp struct {
	DeleteMarker bool   `cbor:"1,keyasint,omitempty"`
	Promoted     string `cbor:"2,keyasint,omitempty"`
}

func (c Client) SetVersioning(ctx context.Context, req *VersioningReq) error {
	_, err := call[VersioningReq, Empty](ctx, c, MethodSetVersioning, req)
	return err
}
func (c Client) GetVersioning(ctx context.Context, req *VersioningReq) (*VersioningResp, error) {
	return call[VersioningReq, VersioningResp](ctx, c, MethodGetVersioning, req)
}
func (c Client) ListVersions(ctx context.Context, req *ListVersionsReq) (*ListVersionsResp, error) {
	return call[ListVersionsReq, ListVersionsResp](ctx, c, MethodListVersions, req)
}
func (c Client) GetVersion(ctx context.Context, req *VersionReq) (*VersionEntry, error) {
	return call[VersionReq, VersionEntry](ctx, c, MethodGetVersion, req)
}
func (c Client) DeleteKey(ctx context.Context, req *DeleteKeyReq) (*DeleteKeyResp, error) {
	return call[DeleteKeyReq, DeleteKeyResp](ctx, c, MethodDeleteKey, req)
}
func (c Client) DeleteVersion(ctx context.Context, req *DeleteVersionReq) (*DeleteVersionResp, error) {
	return call[DeleteVersionReq, DeleteVersionResp](ctx, c, MethodDeleteVersion, req)
}

// MethodVersionScope says where a directory's names are as keys of a
// versioned bucket (the mount's view of old versions).
const MethodVersionScope rpc.Method = 0x0456

func init() { rpc.RegisterMethod(MethodVersionScope, "metad.VersionScope") }

// VersionScopeResp: Bucket 0 when the directory is in no bucket with a
// versioning state; DirKey is the key prefix of its names.
type VersionScopeResp struct {
	Bucket uint64     `cbor:"1,keyasint,omitempty"`
	DirKey string     `cbor:"2,keyasint,omitempty"`
	State  Versioning `cbor:"3,keyasint,omitempty"`
}

func (c Client) VersionScope(ctx context.Context, dir uint64) (*VersionScopeResp, error) {
	return call[InodeReq, VersionScopeResp](ctx, c, MethodVersionScope, &InodeReq{Ino: dir})
}
