package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// statObject finds the object a request names: the file (or the explicit
// directory of a marker key) and its stored metadata.
func (g *Gateway) statObject(ctx context.Context, rc *reqCtx) (metaapi.Inode, *objectMeta, error) {
	o, err := parseKey(rc.bucket, rc.object)
	if err != nil {
		return metaapi.Inode{}, nil, err
	}
	return g.statVersioned(ctx, rc, o)
}

// statPath is statObject for a parsed key.
func (g *Gateway) statPath(ctx context.Context, o objectPath) (metaapi.Inode, *objectMeta, error) {
	// A small object's bytes and the object's record come with the path:
	// no open to read the one, no call to read the other.
	in, rec, _, err := g.meta.ResolveRead(ctx, o.path(), true, xattrObject)
	if err != nil {
		err = nsError(err, keyRead, o.key)
		if toAPIError(err).Code == "NoSuchKey" {
			// In a bucket that is not there, the bucket is what is missing.
			if _, berr := g.bucketInode(ctx, o.bucket); berr != nil {
				return in, nil, berr
			}
		}
		return in, nil, err
	}
	switch {
	case in.Type == metaapi.TypeDir && (!o.dir || in.Implicit):
		return in, nil, errCode("NoSuchKey", "")
	case in.Type != metaapi.TypeDir && o.dir:
		return in, nil, errCode("NoSuchKey", "")
	case in.Type != metaapi.TypeDir && in.Type != metaapi.TypeFile:
		return in, nil, errCode("NoSuchKey", "")
	}
	g.primeMeta(in, rec) // nil: the object has no record
	om, err := g.metaOf(ctx, in)
	return in, om, err
}

// objectHeaders sets the headers every GET and HEAD returns.
func objectHeaders(h http.Header, in metaapi.Inode, om *objectMeta, etag string) {
	h.Set("ETag", quoteETag(etag))
	h.Set("Last-Modified", time.Unix(0, in.Mtime).UTC().Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	ct := "application/octet-stream"
	if in.Type == metaapi.TypeDir {
		ct = "application/x-directory"
	}
	if om != nil {
		for k, v := range om.Headers {
			h.Set(k, v)
		}
		for k, v := range om.Meta {
			// As stored (lower case), as S3 sends them: clients that keep
			// a header's case (botocore) read the name from it.
			h["x-amz-meta-"+k] = []string{v}
		}
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", ct)
	}
}

// parseRange parses a single "bytes=" range against size.
func parseRange(v string, size int64) (start, length int64, err error) {
	spec, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return 0, size, nil // not a range we serve: the whole object, as S3 does
	}
	a, b, ok := strings.Cut(spec, "-")
	if !ok {
		return 0, size, nil
	}
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	invalid := errCode("InvalidRange", "")
	switch {
	case a == "" && b == "":
		return 0, size, nil
	case a == "":
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 0 {
			return 0, size, nil
		}
		if n == 0 {
			return 0, 0, invalid
		}
		n = min(n, size)
		return size - n, n, nil
	default:
		s, err := strconv.ParseInt(a, 10, 64)
		if err != nil || s < 0 {
			return 0, size, nil
		}
		e := size - 1
		if b != "" {
			if e, err = strconv.ParseInt(b, 10, 64); err != nil || e < s {
				return 0, size, nil
			}
		}
		if s >= size {
			return 0, 0, invalid
		}
		e = min(e, size-1)
		return s, e - s + 1, nil
	}
}

// responseOverrides are the query parameters of a GET or HEAD that set a
// header of its response, and the header each sets.
var responseOverrides = []struct{ q, h string }{{"response-content-type", "Content-Type"}, {"response-content-language", "Content-Language"},
	{"response-expires", "Expires"}, {"response-cache-control", "Cache-Control"}, {"response-content-disposition", "Content-Disposition"},
	{"response-content-encoding", "Content-Encoding"}}

// getObject serves GET and HEAD.
func (g *Gateway) getObject(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	q := r.URL.Query()
	if rc.key == nil {
		// Anonymous (a public-read bucket): whoever links to an object must
		// not choose how it is served (a page as text/html), as in S3.
		for _, p := range responseOverrides {
			if q.Has(p.q) {
				return errCode("InvalidRequest", "Request specific response headers cannot be used for anonymous GET requests.")
			}
		}
	}
	in, om, err := g.statObject(ctx, rc)
	if err != nil {
		return err
	}
	etag := etagFor(in, om)
	mtime := time.Unix(0, in.Mtime)
	if err := checkReadConditions(r.Header, etag, mtime, ""); err != nil {
		if toAPIError(err).Code == "NotModified" {
			w.Header().Set("ETag", quoteETag(etag))
			w.Header().Set("Last-Modified", mtime.UTC().Format(http.TimeFormat))
		}
		return err
	}
	h := w.Header()
	objectHeaders(h, in, om, etag)
	lockHeaders(h, in)
	for _, p := range responseOverrides {
		if v := q.Get(p.q); v != "" {
			h.Set(p.h, v)
		}
	}
	if om != nil && om.Tags > 0 {
		h.Set("X-Amz-Tagging-Count", strconv.Itoa(om.Tags))
	}
	size := int64(in.Length)
	if in.Type == metaapi.TypeDir {
		size = 0
	}
	start, length := int64(0), size
	partial := false
	if pn := q.Get("partNumber"); pn != "" {
		n, err := strconv.Atoi(pn)
		if err != nil || n < 1 || n > maxParts {
			return errCode("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive.")
		}
		if r.Header.Get("Range") != "" {
			return errCode("InvalidRequest", "Cannot specify both Range header and partNumber query parameter")
		}
		// A part is a range: 206 with its Content-Range, and the parts
		// count when the object was uploaded in parts (only then, as S3).
		parts := []int64{size}
		if om != nil && len(om.Parts) > 0 && om.Gen == in.Gen {
			parts = om.Parts
			h.Set("X-Amz-Mp-Parts-Count", strconv.Itoa(len(parts)))
		}
		if n > len(parts) {
			h.Del("X-Amz-Mp-Parts-Count")
			return errCode("InvalidPart", "The object has %d parts.", len(parts))
		}
		for _, p := range parts[:n-1] {
			start += p
		}
		length = parts[n-1]
		partial = length > 0
	} else if rv := r.Header.Get("Range"); rv != "" {
		s, l, err := parseRange(rv, size)
		if err != nil {
			h.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
			return err
		}
		start, length, partial = s, l, l != size || s != 0
	}
	if partial {
		h.Set("Content-Range", "bytes "+strconv.FormatInt(start, 10)+"-"+strconv.FormatInt(start+length-1, 10)+"/"+strconv.FormatInt(size, 10))
	}
	if strings.EqualFold(r.Header.Get("X-Amz-Checksum-Mode"), "ENABLED") && om != nil && om.Checksum != "" && om.Gen == in.Gen && !partial {
		h.Set(checksumHeader(om.ChecksumAlgo), om.Checksum)
		if om.ChecksumType != "" {
			h.Set("X-Amz-Checksum-Type", om.ChecksumType)
		}
	}
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	status := http.StatusOK
	if partial {
		status = http.StatusPartialContent
	}
	if r.Method == http.MethodHead || length == 0 {
		w.WriteHeader(status)
		return nil
	}
	f, err := g.fs.OpenInode(ctx, in, nil)
	if err != nil {
		return err
	}
	w.WriteHeader(status)
	return copyOut(ctx, w, f, start, length)
}

func (g *Gateway) getObjectAttributes(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	in, om, err := g.statObject(r.Context(), rc)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, v := range r.Header.Values("X-Amz-Object-Attributes") {
		for _, a := range strings.Split(v, ",") {
			want[strings.TrimSpace(a)] = true
		}
	}
	etag := etagFor(in, om)
	res := getObjectAttributesResponse{NS: s3NS}
	if want["ETag"] {
		res.ETag = etag
	}
	if want["ObjectSize"] {
		n := int64(in.Length)
		if in.Type == metaapi.TypeDir {
			n = 0
		}
		res.ObjectSize = &n
	}
	if want["StorageClass"] {
		res.StorageClass = "STANDARD"
	}
	valid := om != nil && om.Gen == in.Gen
	if want["Checksum"] && valid && om.Checksum != "" {
		c := checksumsOf(om.ChecksumAlgo, om.Checksum)
		res.Checksum = &c
	}
	if want["ObjectParts"] && valid && len(om.Parts) > 0 {
		maxParts, marker := 1000, 0
		if v := r.Header.Get("X-Amz-Max-Parts"); v != "" {
			if maxParts, err = strconv.Atoi(v); err != nil || maxParts < 0 {
				return errCode("InvalidArgument", "x-amz-max-parts must be a non-negative integer.")
			}
			maxParts = min(maxParts, 1000)
		}
		if v := r.Header.Get("X-Amz-Part-Number-Marker"); v != "" {
			if marker, err = strconv.Atoi(v); err != nil || marker < 0 {
				return errCode("InvalidArgument", "x-amz-part-number-marker must be a non-negative integer.")
			}
		}
		op := &objParts{PartsCount: len(om.Parts), PartNumberMarker: marker, MaxParts: maxParts}
		// The parts are listed when they have checksums, as S3 lists them.
		if len(om.PartSums) == len(om.Parts) {
			for i := marker; i < len(om.Parts); i++ {
				if len(op.Parts) == maxParts {
					op.IsTruncated = true
					break
				}
				op.Parts = append(op.Parts, objPart{PartNumber: i + 1, Size: om.Parts[i], checksums: checksumsOf(om.ChecksumAlgo, om.PartSums[i])})
				op.NextPartNumberMarker = i + 1
			}
		}
		res.ObjectParts = op
	}
	w.Header().Set("Last-Modified", time.Unix(0, in.Mtime).UTC().Format(http.TimeFormat))
	return writeXML(w, res)
}

// checksumsOf puts a checksum in the element of its algorithm.
func checksumsOf(algo, sum string) checksums {
	var c checksums
	switch algo {
	case "crc32":
		c.ChecksumCRC32 = sum
	case "crc32c":
		c.ChecksumCRC32C = sum
	case "crc64nvme":
		c.ChecksumCRC64NVME = sum
	case "sha1":
		c.ChecksumSHA1 = sum
	case "sha256":
		c.ChecksumSHA256 = sum
	}
	return c
}
