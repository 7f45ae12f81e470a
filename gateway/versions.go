package gateway

import (
	"encoding/xml"
	"io"
	"net/http"
)

// Versions. No flyfs bucket is versioned: an object has one version, whose
// id is "null" (S3's id of the version of an object in a bucket that never
// had versioning), and an overwrite or a delete replaces or removes it.
// ListObjectVersions lists that version of every object, from the walk of
// ListObjectsV2; "null" names it wherever S3 takes a version id (the
// versionId parameter, a copy source, DeleteObjects); any other id names no
// version and is refused. Versioning cannot be turned on (or suspended).

// nullVersion is the id of an object's one version.
const nullVersion = "null"

// versionIDError is the answer for a version id that names no version
// (nil for "null", the one version).
func versionIDError(id string) error {
	switch id {
	case nullVersion:
		return nil
	case "":
		return errCode("InvalidArgument", "Version id cannot be the empty string")
	}
	return errCode("InvalidArgument", "Invalid version id specified")
}

// listObjectVersions is ListObjectVersions: the listing of ListObjectsV2,
// each object as its one version, the latest. The key marker resumes after
// its key; the version-id marker, when given, can only be that key's
// version "null", already listed with it.
func (g *Gateway) listObjectVersions(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	prefix, delim, maxKeys, encode, err := listParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	keyMarker, vidMarker := q.Get("key-marker"), q.Get("version-id-marker")
	if vidMarker != "" {
		if keyMarker == "" {
			return errCode("InvalidArgument", "A version-id marker cannot be specified without a key marker.")
		}
		if err := versionIDError(vidMarker); err != nil {
			return err
		}
	}
	l := &lister{g: g, ctx: r.Context(), bucket: rc.bucket, prefix: prefix, delim: delim, after: keyMarker, max: maxKeys}
	if maxKeys > 0 {
		if err := l.run(); err != nil {
			return err
		}
	} else if _, err := g.bucketInode(r.Context(), rc.bucket); err != nil {
		return err
	}
	objs, cps := l.objectInfos(true, encode)
	res := listVersionsResult{NS: s3NS, Name: rc.bucket, Prefix: encode(prefix), KeyMarker: encode(keyMarker), VersionIDMarker: vidMarker,
		MaxKeys: maxKeys, IsTruncated: l.truncated, CommonPrefixes: cps}
	for _, o := range objs {
		res.Versions = append(res.Versions, objectVersion{Key: o.Key, VersionID: nullVersion, IsLatest: true, LastModified: o.LastModified,
			ETag: o.ETag, Size: o.Size, StorageClass: o.StorageClass, Owner: o.Owner, ChecksumAlgorithm: o.ChecksumAlgorithm})
	}
	if delim != "" {
		res.Delimiter = encode(delim)
	}
	if q.Get("encoding-type") == "url" {
		res.EncodingType = "url"
	}
	if l.truncated && len(l.items) > 0 {
		// The last key (or common prefix) and its one version: both
		// markers, so a client that passes on both (boto's loops) resumes.
		res.NextKeyMarker = encode(l.items[len(l.items)-1].key)
		res.NextVersionIDMarker = nullVersion
	}
	return writeXML(w, res)
}

// versioningConfigurationBody is the body of PutBucketVersioning.
type versioningConfigurationBody struct {
	XMLName   xml.Name `xml:"VersioningConfiguration"`
	Status    string   `xml:"Status"`
	MfaDelete string   `xml:"MfaDelete"`
}

// putBucketVersioning refuses to change a bucket's versioning: Enabled
// would keep every version, and Suspended, which S3 accepts on a bucket
// that was never versioned, gives it a state in which a delete leaves a
// delete marker. Neither is what a flyfs bucket does, so neither is
// accepted; a document that is neither is MalformedXML, as in S3.
func (g *Gateway) putBucketVersioning(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	if _, err := g.bucketInode(r.Context(), rc.bucket); err != nil {
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
	case "", "Disabled", "Enabled":
	default:
		return errCode("MalformedXML", "")
	}
	switch v.Status {
	case "Enabled":
		return errCode("NotImplemented", "PutBucketVersioning with Status Enabled is not implemented by flyfs: buckets are never versioned (an object has one version, null, which an overwrite or a delete replaces); nothing was changed.")
	case "Suspended":
		return errCode("NotImplemented", "PutBucketVersioning with Status Suspended is not implemented by flyfs: on a bucket that was never versioned it would set the Suspended state, in which S3 keeps a delete marker for each delete; flyfs buckets stay never versioned, and nothing was changed.")
	}
	return errCode("MalformedXML", "")
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
