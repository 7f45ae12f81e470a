package gateway

import (
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Versions. A bucket is never versioned until PutBucketVersioning enables
// it; then it is Enabled or Suspended for good, as in S3. The namespace
// keeps the versions (metad/ns/versions.go): the current version of a key
// is its file, whose inode carries the version id; overwrites and deletes
// keep the replaced file as a noncurrent version (no data moves) and
// deletes leave delete markers, through S3 and POSIX alike. An object made
// while the bucket was not Enabled has the id "null".
//
// Version ids are "null" or 32 hex digits. A well-formed id that names no
// version is NoSuchVersion; another string is InvalidArgument, as in S3.

// nullVersion is the id of a version made while the bucket was not Enabled.
const nullVersion = metaapi.NullVersion

// versionOfInode is the id of the version a file is as its key's current one.
func versionOfInode(in metaapi.Inode) string {
	if in.VersionID == "" {
		return nullVersion
	}
	return in.VersionID
}

// checkVersionIDSyntax refuses what cannot be a version id.
func checkVersionIDSyntax(id string) error {
	switch {
	case id == "":
		return errCode("InvalidArgument", "Version id cannot be the empty string")
	case id == nullVersion:
		return nil
	case len(id) != 32:
		return errCode("InvalidArgument", "Invalid version id specified")
	}
	for _, c := range []byte(id) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return errCode("InvalidArgument", "Invalid version id specified")
		}
	}
	return nil
}

// statVersioned is statPath for a request that may name a version: the
// current version (also when versionId names it), or a noncurrent one.
// In a versioned bucket it sets x-amz-version-id, and for a key whose
// newest version is a delete marker, x-amz-delete-marker.
func (g *Gateway) statVersioned(ctx context.Context, rc *reqCtx, o objectPath) (metaapi.Inode, *objectMeta, error) {
	if !rc.hasVersion {
		in, om, err := g.statPath(ctx, o)
		b, st, verr := g.bucketVersioning(ctx, o.bucket)
		if verr != nil || st == metaapi.Unversioned {
			return in, om, err
		}
		if err == nil {
			rc.hdr.Set("X-Amz-Version-Id", versionOfInode(in))
		} else if toAPIError(err).Code == "NoSuchKey" {
			if m, ok := g.latestMarker(ctx, b.ID, o.key); ok {
				rc.hdr.Set("X-Amz-Delete-Marker", "true")
				rc.hdr.Set("X-Amz-Version-Id", m.ID)
			}
		}
		return in, om, err
	}
	return g.statByVersion(ctx, o, rc.versionID, rc.hdr)
}

// statByVersion finds version id of o, setting its version headers in h.
func (g *Gateway) statByVersion(ctx context.Context, o objectPath, id string, h http.Header) (metaapi.Inode, *objectMeta, error) {
	if err := checkVersionIDSyntax(id); err != nil {
		return metaapi.Inode{}, nil, err
	}
	b, err := g.bucketInode(ctx, o.bucket)
	if err != nil {
		return metaapi.Inode{}, nil, err
	}
	in, om, err := g.statPath(ctx, o)
	if err == nil && (in.Type == metaapi.TypeFile || id == nullVersion) && versionOfInode(in) == id {
		h.Set("X-Amz-Version-Id", id)
		return in, om, nil
	}
	if o.dir {
		return metaapi.Inode{}, nil, errCode("NoSuchVersion", "")
	}
	e, err := g.meta.GetVersion(ctx, b.ID, o.key, id)
	if err != nil {
		return metaapi.Inode{}, nil, versionError(err)
	}
	h.Set("X-Amz-Version-Id", id)
	if e.DeleteMarker {
		h.Set("X-Amz-Delete-Marker", "true")
		h.Set("Last-Modified", time.Unix(0, e.Time).UTC().Format(http.TimeFormat))
		return metaapi.Inode{}, nil, errCode("MethodNotAllowed", "The specified method is not allowed against a delete marker.")
	}
	if e.Inode == nil {
		return metaapi.Inode{}, nil, errCode("InternalError", "")
	}
	om, err = g.metaOf(ctx, *e.Inode)
	return *e.Inode, om, err
}

// versionError maps a version lookup's failure: a missing version is
// NoSuchVersion.
func versionError(err error) error {
	if errnoOf(err) == syscall.ENOENT {
		return errCode("NoSuchVersion", "")
	}
	return err
}

// latestMarker returns key's newest record if it is a delete marker.
func (g *Gateway) latestMarker(ctx context.Context, bucket uint64, key string) (metaapi.VersionEntry, bool) {
	res, err := g.meta.ListVersions(ctx, metaapi.ListVersionsReq{Bucket: bucket, Prefix: key, Limit: 1})
	if err != nil || len(res.Entries) == 0 || res.Entries[0].Key != key || !res.Entries[0].DeleteMarker {
		return metaapi.VersionEntry{}, false
	}
	return res.Entries[0], true
}

// publishedVersion is the version id a PUT that published file ino gets in
// a versioned bucket ("" in one never versioned: no header).
func (g *Gateway) publishedVersion(ctx context.Context, bucket string, ino uint64) string {
	_, st, err := g.bucketVersioning(ctx, bucket)
	if err != nil || st == metaapi.Unversioned || ino == 0 {
		return ""
	}
	in, err := g.meta.Stat(ctx, ino)
	if err != nil {
		return ""
	}
	return versionOfInode(in)
}

// versioningConfigurationBody is the body of PutBucketVersioning.
type versioningConfigurationBody struct {
	XMLName   xml.Name `xml:"VersioningConfiguration"`
	Status    string   `xml:"Status"`
	MfaDelete string   `xml:"MfaDelete"`
}

// putBucketVersioning sets Enabled or Suspended. MFA delete is refused
// (flyfs has no MFA devices to check); a document that is neither state is
// MalformedXML, as in S3.
func (g *Gateway) putBucketVersioning(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	b, err := g.bucketInode(ctx, rc.bucket)
	if err != nil {
		return err
	}
	data, err := readConfigBody(rc, maxXMLBody)
	if err != nil {
		return err
	}
	var v versioningConfigurationBody
	if xml.Unmarshal(data, &v) != nil {
		return errCode("MalformedXML", "")
	}
	switch v.MfaDelete {
	case "", "Disabled":
	case "Enabled":
		return errCode("NotImplemented", "PutBucketVersioning with MfaDelete Enabled is not implemented by flyfs: it has no MFA devices to check a delete against; nothing was changed.")
	default:
		return errCode("MalformedXML", "")
	}
	var st metaapi.Versioning
	switch v.Status {
	case "Enabled":
		st = metaapi.VersioningEnabled
	case "Suspended":
		st = metaapi.VersioningSuspended
	default:
		return errCode("MalformedXML", "")
	}
	if st == metaapi.VersioningSuspended {
		if l, err := g.lockOf(ctx, b.ID); err != nil || (l != nil && l.Enabled) {
			if err == nil {
				err = errCode("InvalidBucketState", "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed.")
			}
			return err
		}
	}
	if err := g.meta.SetVersioning(ctx, b.ID, st); err != nil {
		return err
	}
	g.bcache.drop(rc.bucket)
	w.WriteHeader(http.StatusOK)
	return nil
}

func (g *Gateway) getBucketVersioning(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	b, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	st, err := g.meta.GetVersioning(r.Context(), b.ID)
	if err != nil {
		return err
	}
	type versioningConfiguration struct {
		XMLName struct{} `xml:"VersioningConfiguration"`
		NS      string   `xml:"xmlns,attr"`
		Status  string   `xml:"Status,omitempty"`
	}
	res := versioningConfiguration{NS: s3NS}
	switch st {
	case metaapi.VersioningEnabled:
		res.Status = "Enabled"
	case metaapi.VersioningSuspended:
		res.Status = "Suspended"
	}
	return writeXML(w, res)
}

// readConfigBody reads the document of a bucket configuration PUT: at most
// limit bytes, and not none.
func readConfigBody(rc *reqCtx, limit int) ([]byte, error) {
	if rc.body == nil {
		return nil, errCode("MissingRequestBodyError", "")
	}
	data, err := io.ReadAll(io.LimitReader(rc.body, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, errCode("MaxMessageLengthExceeded", "The document is larger than %d bytes.", limit)
	}
	if len(data) == 0 {
		return nil, errCode("MissingRequestBodyError", "")
	}
	return data, nil
}
