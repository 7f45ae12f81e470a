package gateway

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"hash"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
)

const (
	maxPutSize  = 5 << 30 // S3's single-PUT limit
	maxPartSize = 5 << 30
	fileMode    = 0o644
	dirMode     = 0o755
)

// staged is a file written into the staging directory, not yet visible.
type staged struct {
	name string
	in   metaapi.Inode
	md5  string // hex
	sum  string // the additional checksum (base64), if one was asked for
}

func newStagingName() string {
	return strings.ToLower(newRequestID()) + strings.ToLower(newRequestID())
}

// discard removes a staging file that will not be published.
func (g *Gateway) discard(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.meta.Unlink(ctx, metaapi.RemoveReq{Parent: g.stagingIno, Name: name}); err != nil && errnoOf(err) != syscall.ENOENT {
		g.log.Warn("s3 gateway: could not remove a staging file (the sweeper will)", "name", name, "err", err)
	}
}

// stage streams body into a new staging file and checks what the request
// claimed about it: length, Content-MD5, additional checksum.
func (g *Gateway) stage(ctx context.Context, rc *reqCtx, body interface{ Read([]byte) (int, error) }, size int64, limit int64, spec *checksumSpec, contentMD5 string) (*staged, error) {
	name := newStagingName()
	in, session, _, err := g.meta.Create(ctx, g.stagingIno, name, fileMode, os.O_CREATE|os.O_EXCL|os.O_WRONLY, rc.creds())
	if err != nil {
		return nil, err
	}
	st := &staged{name: name}
	ok := false
	defer func() {
		if !ok {
			g.discard(name)
		}
	}()
	f, err := g.fs.OpenInode(ctx, in, session)
	if err != nil {
		return nil, err
	}
	m, release := newMD5(size)
	defer release()
	hashes := []hash.Hash{m}
	var ch hash.Hash
	if spec != nil {
		ch = newChecksumHash(spec.algo)
		hashes = append(hashes, ch)
	}
	n, err := copyInSized(ctx, f, 0, body, size, limit, hashes...)
	if cerr := f.CloseContext(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if size >= 0 && n != size {
		return nil, errCode("IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header (%d of %d).", n, size)
	}
	st.in = f.Inode()
	st.md5 = hex.EncodeToString(m.Sum(nil))
	if contentMD5 != "" {
		want, err := base64.StdEncoding.DecodeString(contentMD5)
		if err != nil || len(want) != md5.Size {
			return nil, errCode("InvalidDigest", "")
		}
		if hex.EncodeToString(want) != st.md5 {
			return nil, errCode("BadDigest", "")
		}
	}
	if spec != nil {
		st.sum = base64.StdEncoding.EncodeToString(ch.Sum(nil))
		want := spec.expected
		if spec.trailer {
			if rc.chunked != nil {
				want = rc.chunked.Trailer[checksumHeader(spec.algo)]
			}
			if want == "" {
				return nil, errCode("MalformedTrailerError", "The announced trailer %s did not arrive.", checksumHeader(spec.algo))
			}
		}
		if want != "" && want != st.sum {
			return nil, errCode("BadDigest", "The %s you specified did not match the calculated checksum.", checksumHeader(spec.algo))
		}
	}
	ok = true
	return st, nil
}

// writeCond is a conditional write's preconditions on the destination.
type writeCond struct {
	ifNoneMatch string // "*" only
	ifMatch     string
}

func writeCondOf(h http.Header) (writeCond, error) {
	c := writeCond{ifNoneMatch: strings.TrimSpace(h.Get("If-None-Match")), ifMatch: strings.TrimSpace(h.Get("If-Match"))}
	if c.ifNoneMatch != "" && c.ifNoneMatch != "*" {
		return c, errCode("NotImplemented", "If-None-Match on a write accepts only '*'.")
	}
	return c, nil
}

// ensureParent returns the directory that holds o, creating missing
// directories as implicit ones in one transaction.
func (g *Gateway) ensureParent(ctx context.Context, o objectPath, cr client.Creds) (metaapi.Inode, error) {
	if len(o.segs) == 1 {
		return g.bucketInode(ctx, o.bucket)
	}
	in, err := g.meta.MkdirAll(ctx, o.parentPath(), dirMode, cr, true)
	if err != nil {
		switch errnoOf(err) {
		case syscall.ENOTDIR, syscall.EEXIST:
			return in, errCode("ObjectConflict", "A parent of the key %q is an object (a file), so the key cannot be created below it.", o.key)
		}
		return in, err
	}
	return in, nil
}

// publish renames the staging file (or directory) src into o's place in one
// metadata transaction; the preconditions are decided in that transaction.
func (g *Gateway) publish(ctx context.Context, srcParent uint64, srcName string, o objectPath, cr client.Creds, cond writeCond, pruneSrc bool) error {
	var last error
	for attempt := 0; attempt < 4; attempt++ {
		parent, err := g.ensureParent(ctx, o, cr)
		if err != nil {
			return err
		}
		req := metaapi.RenameReq{SrcParent: srcParent, SrcName: srcName, DstParent: parent.ID, DstName: o.name(), PruneImplicit: pruneSrc}
		if cond.ifNoneMatch == "*" {
			req.Flags = metaapi.RenameNoReplace
		}
		if cond.ifMatch != "" {
			cur, err := g.meta.Lookup(ctx, parent.ID, o.name())
			if err != nil {
				if errnoOf(err) == syscall.ENOENT {
					return errCode("NoSuchKey", "")
				}
				return err
			}
			if (cur.Type == metaapi.TypeDir) != o.dir {
				return errCode("PreconditionFailed", "")
			}
			om, err := g.loadMeta(ctx, cur.ID)
			if err != nil {
				return err
			}
			if !etagMatches(cond.ifMatch, etagFor(cur, om)) {
				return errCode("PreconditionFailed", "")
			}
			req.IfDstIno, req.IfDstGen = cur.ID, cur.Gen
		}
		err = g.meta.Rename(ctx, req)
		switch errnoOf(err) {
		case 0:
			return nil
		case syscall.ENOENT:
			// A concurrent delete pruned the parent we just made (or the
			// bucket we knew went): again, looking it up afresh.
			g.bcache.drop(o.bucket)
			last = err
			continue
		case syscall.EEXIST:
			if cond.ifNoneMatch == "*" {
				return errCode("PreconditionFailed", "")
			}
			return errCode("ObjectConflict", "The key %q names a directory that holds other objects.", o.key)
		case syscall.ECANCELED:
			return errCode("PreconditionFailed", "")
		case syscall.EISDIR, syscall.ENOTEMPTY:
			return errCode("ObjectConflict", "The key %q names a directory that holds other objects; delete them first.", o.key)
		case syscall.ENOTDIR:
			return errCode("ObjectConflict", "The key %q names an object (a file), not a directory.", o.key)
		}
		return err
	}
	return last
}

func (g *Gateway) putObject(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	o, err := parseKey(rc.bucket, rc.object)
	if err != nil {
		return err
	}
	if rc.size > maxPutSize {
		return errCode("EntityTooLarge", "A single PUT may carry at most 5 GiB; use a multipart upload.")
	}
	if _, err := g.bucketInode(ctx, rc.bucket); err != nil {
		return err
	}
	om, err := metaFromRequest(r.Header)
	if err != nil {
		return err
	}
	tags, err := tagsFromHeader(r.Header.Get("X-Amz-Tagging"))
	if err != nil {
		return err
	}
	spec, err := requestChecksum(r.Header)
	if err != nil {
		return err
	}
	cond, err := writeCondOf(r.Header)
	if err != nil {
		return err
	}
	if o.dir {
		return g.putMarker(w, r, rc, o, om, cond)
	}
	st, err := g.stage(ctx, rc, rc.body, rc.size, maxPutSize, spec, r.Header.Get("Content-Md5"))
	if err != nil {
		return err
	}
	published := false
	defer func() {
		if !published {
			g.discard(st.name)
		}
	}()
	om.Gen, om.ETag, om.Tags = st.in.Gen, st.md5, len(tags)
	if spec != nil {
		om.ChecksumAlgo, om.Checksum, om.ChecksumType = spec.algo, st.sum, "FULL_OBJECT"
	}
	if len(tags) > 0 {
		v, _ := json.Marshal(tags)
		if err := g.meta.SetXattr(ctx, st.in.ID, xattrTagging, v, 0); err != nil {
			return err
		}
	}
	if err := g.storeMeta(ctx, st.in.ID, om); err != nil {
		return err
	}
	if err := g.publish(ctx, g.stagingIno, st.name, o, rc.creds(), cond, false); err != nil {
		return err
	}
	published = true
	w.Header().Set("ETag", quoteETag(st.md5))
	if spec != nil {
		w.Header().Set(checksumHeader(spec.algo), st.sum)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// putMarker makes "dir/": an explicit directory. Its body must be empty.
func (g *Gateway) putMarker(w http.ResponseWriter, r *http.Request, rc *reqCtx, o objectPath, om *objectMeta, cond writeCond) error {
	ctx := r.Context()
	if rc.size > 0 {
		return errCode("InvalidArgument", "The key %q ends in '/', which makes it a directory; a directory object must have an empty body.", o.key)
	}
	if rc.size < 0 {
		var one [1]byte
		if n, _ := readFull(rc.body, one[:]); n > 0 {
			return errCode("InvalidArgument", "The key %q ends in '/', which makes it a directory; a directory object must have an empty body.", o.key)
		}
	}
	parent, err := g.ensureParent(ctx, o, rc.creds())
	if err != nil {
		return err
	}
	in, err := g.meta.Mkdir(ctx, parent.ID, o.name(), dirMode, rc.creds())
	switch errnoOf(err) {
	case 0:
	case syscall.EEXIST:
		cur, lerr := g.meta.Lookup(ctx, parent.ID, o.name())
		if lerr != nil {
			return lerr
		}
		if cur.Type != metaapi.TypeDir {
			return errCode("ObjectConflict", "The key %q is an object (a file); the directory %q cannot be created.", strings.TrimSuffix(o.key, "/"), o.key)
		}
		if cond.ifNoneMatch == "*" && !cur.Implicit {
			return errCode("PreconditionFailed", "")
		}
		if cur.Implicit {
			// A marker makes the directory explicit: it is no longer removed
			// when it empties.
			if cur, err = g.meta.SetAttr(ctx, cur.ID, metaapi.SetAttrReq{Mask: metaapi.SetImplicit, Implicit: false}); err != nil {
				return err
			}
		}
		in = cur
	default:
		return err
	}
	if cond.ifMatch != "" {
		old, _ := g.loadMeta(ctx, in.ID)
		if !etagMatches(cond.ifMatch, etagFor(in, old)) {
			return errCode("PreconditionFailed", "")
		}
	}
	om.ETag = emptyMD5
	if err := g.storeMeta(ctx, in.ID, om); err != nil {
		return err
	}
	w.Header().Set("ETag", quoteETag(emptyMD5))
	w.WriteHeader(http.StatusOK)
	return nil
}

// statObject finds the object a request names: the file (or the explicit
// directory of a marker key) and its stored metadata.
func (g *Gateway) statObject(ctx context.Context, rc *reqCtx) (metaapi.Inode, *objectMeta, error) {
	o, err := parseKey(rc.bucket, rc.object)
	if err != nil {
		return metaapi.Inode{}, nil, err
	}
	return g.statPath(ctx, o)
}

func (g *Gateway) statPath(ctx context.Context, o objectPath) (metaapi.Inode, *objectMeta, error) {
	in, err := g.meta.Resolve(ctx, o.path(), true)
	if err != nil {
		if e := errnoOf(err); e == syscall.ENOENT || e == syscall.ENOTDIR || e == syscall.ELOOP {
			if _, berr := g.bucketInode(ctx, o.bucket); berr != nil {
				return in, nil, berr
			}
			return in, nil, errCode("NoSuchKey", "")
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
			h["X-Amz-Meta-"+http.CanonicalHeaderKey(k)] = []string{v}
		}
		if len(om.Parts) > 0 && om.Gen == in.Gen {
			h.Set("X-Amz-Mp-Parts-Count", strconv.Itoa(len(om.Parts)))
		}
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", ct)
	}
}

// checkReadConditions applies If-Match, If-None-Match, If-Modified-Since
// and If-Unmodified-Since (RFC 7232 order, as S3 does).
func checkReadConditions(h http.Header, etag string, mtime time.Time, prefix string) error {
	mtime = mtime.Truncate(time.Second)
	im, inm := h.Get(prefix+"If-Match"), h.Get(prefix+"If-None-Match")
	if im != "" {
		if !etagMatches(im, etag) {
			return errCode("PreconditionFailed", "")
		}
	} else if v := h.Get(prefix + "If-Unmodified-Since"); v != "" {
		if t, err := http.ParseTime(v); err == nil && mtime.After(t) {
			return errCode("PreconditionFailed", "")
		}
	}
	notModified := errCode("NotModified", "")
	if prefix != "" {
		notModified = errCode("PreconditionFailed", "")
	}
	if inm != "" {
		if etagMatches(inm, etag) {
			return notModified
		}
	} else if v := h.Get(prefix + "If-Modified-Since"); v != "" {
		if t, err := http.ParseTime(v); err == nil && !mtime.After(t) {
			return notModified
		}
	}
	return nil
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

// getObject serves GET and HEAD.
func (g *Gateway) getObject(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
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
	q := r.URL.Query()
	for _, p := range []struct{ q, h string }{{"response-content-type", "Content-Type"}, {"response-content-language", "Content-Language"},
		{"response-expires", "Expires"}, {"response-cache-control", "Cache-Control"}, {"response-content-disposition", "Content-Disposition"},
		{"response-content-encoding", "Content-Encoding"}} {
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
		parts := []int64{size}
		if om != nil && len(om.Parts) > 0 && om.Gen == in.Gen {
			parts = om.Parts
		}
		if n > len(parts) {
			return errCode("InvalidPart", "The object has %d parts.", len(parts))
		}
		for _, p := range parts[:n-1] {
			start += p
		}
		length = parts[n-1]
		partial = len(parts) > 1
		h.Set("X-Amz-Mp-Parts-Count", strconv.Itoa(len(parts)))
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

// deleteOne removes one key; a missing key is success, as in S3.
func (g *Gateway) deleteOne(ctx context.Context, bucket, key, ifMatch string) error {
	o, err := parseKey(bucket, key)
	if err != nil {
		return err
	}
	parent, err := g.meta.Resolve(ctx, o.parentPath(), true)
	if err != nil {
		if e := errnoOf(err); e == syscall.ENOENT || e == syscall.ENOTDIR {
			if ifMatch != "" {
				return errCode("NoSuchKey", "")
			}
			return nil
		}
		return err
	}
	if o.dir {
		return g.deleteMarker(ctx, o, parent, ifMatch)
	}
	req := metaapi.RemoveReq{Parent: parent.ID, Name: o.name(), PruneImplicit: true}
	if ifMatch != "" {
		cur, err := g.meta.Lookup(ctx, parent.ID, o.name())
		if err != nil {
			if errnoOf(err) == syscall.ENOENT {
				return errCode("NoSuchKey", "")
			}
			return err
		}
		if cur.Type == metaapi.TypeDir {
			return errCode("NoSuchKey", "")
		}
		om, err := g.loadMeta(ctx, cur.ID)
		if err != nil {
			return err
		}
		if !etagMatches(ifMatch, etagFor(cur, om)) {
			return errCode("PreconditionFailed", "")
		}
		req.IfIno, req.IfGen = cur.ID, cur.Gen
	}
	err = g.meta.Unlink(ctx, req)
	switch errnoOf(err) {
	case 0, syscall.ENOENT, syscall.EISDIR, syscall.ENOTDIR:
		// A directory "a" is not the object "a" (that would be "a/").
		return nil
	case syscall.ECANCELED:
		return errCode("PreconditionFailed", "")
	}
	return err
}

// deleteMarker removes the explicit directory of a "dir/" key when it is
// empty; when it still holds objects only the marker goes: the directory
// becomes implicit and disappears with its last object.
func (g *Gateway) deleteMarker(ctx context.Context, o objectPath, parent metaapi.Inode, ifMatch string) error {
	cur, err := g.meta.Lookup(ctx, parent.ID, o.name())
	if err != nil || cur.Type != metaapi.TypeDir || cur.Implicit {
		if ifMatch != "" {
			return errCode("NoSuchKey", "")
		}
		if err != nil && errnoOf(err) != syscall.ENOENT {
			return err
		}
		return nil
	}
	if ifMatch != "" {
		om, _ := g.loadMeta(ctx, cur.ID)
		if !etagMatches(ifMatch, etagFor(cur, om)) {
			return errCode("PreconditionFailed", "")
		}
	}
	err = g.meta.Rmdir(ctx, parent.ID, o.name())
	switch errnoOf(err) {
	case 0:
		g.pruneUp(ctx, o)
		return nil
	case syscall.ENOENT:
		return nil
	case syscall.ENOTEMPTY, syscall.EEXIST:
		_, err = g.meta.SetAttr(ctx, cur.ID, metaapi.SetAttrReq{Mask: metaapi.SetImplicit, Implicit: true})
		if err == nil {
			_ = g.meta.RemoveXattr(ctx, cur.ID, xattrObject)
		}
		return err
	}
	return err
}

// pruneUp removes the now-empty implicit ancestors of o (below the bucket).
// Rmdir only removes an empty directory, so a concurrent PUT into one of
// them simply stops the pruning.
func (g *Gateway) pruneUp(ctx context.Context, o objectPath) {
	for i := len(o.segs) - 1; i >= 1; i-- {
		dirPath := "/" + o.bucket + "/" + strings.Join(o.segs[:i], "/")
		in, err := g.meta.Resolve(ctx, dirPath, false)
		if err != nil || in.Type != metaapi.TypeDir || !in.Implicit {
			return
		}
		parent, err := g.meta.Resolve(ctx, "/"+o.bucket+"/"+strings.Join(o.segs[:i-1], "/"), false)
		if err != nil {
			return
		}
		if g.meta.Rmdir(ctx, parent.ID, o.segs[i-1]) != nil {
			return
		}
	}
}

func (g *Gateway) deleteObject(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	if _, err := g.bucketInode(ctx, rc.bucket); err != nil {
		return err
	}
	if err := g.deleteOne(ctx, rc.bucket, rc.object, r.Header.Get("If-Match")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (g *Gateway) deleteObjects(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	var req deleteRequest
	if err := decodeXML(rc.body, &req); err != nil {
		return err
	}
	if len(req.Objects) > 1000 {
		return errCode("MalformedXML", "A DeleteObjects request may name at most 1000 keys.")
	}
	if _, err := g.bucketInode(ctx, rc.bucket); err != nil {
		return err
	}
	errs := make([]error, len(req.Objects))
	sem := make(chan struct{}, 16)
	done := make(chan struct{})
	for i, obj := range req.Objects {
		sem <- struct{}{}
		go func(i int, obj deleteObjectID) {
			defer func() { <-sem; done <- struct{}{} }()
			errs[i] = g.deleteOne(ctx, rc.bucket, obj.Key, obj.ETag)
		}(i, obj)
	}
	for range req.Objects {
		<-done
	}
	res := deleteResult{NS: s3NS}
	for i, obj := range req.Objects {
		if errs[i] != nil {
			ae := toAPIError(errs[i])
			res.Errors = append(res.Errors, deleteError{Key: obj.Key, Code: ae.Code, Message: ae.Message})
		} else if !req.Quiet {
			res.Deleted = append(res.Deleted, deletedObject{Key: obj.Key})
		}
	}
	return writeXML(w, res)
}

// copySource parses x-amz-copy-source ("[/]bucket/key[?versionId=...]").
func copySource(v string) (bucket, key string, err error) {
	if i := strings.Index(v, "?versionId="); i >= 0 {
		if v[i+len("?versionId="):] != "null" {
			return "", "", errCode("NotImplemented", "Versioning is not supported.")
		}
		v = v[:i]
	}
	dv, err := url.PathUnescape(v)
	if err != nil {
		return "", "", errCode("InvalidArgument", "Copy Source must mention the source bucket and key: sourcebucket/sourcekey.")
	}
	dv = strings.TrimPrefix(dv, "/")
	bucket, key, ok := strings.Cut(dv, "/")
	if !ok || bucket == "" || key == "" {
		return "", "", errCode("InvalidArgument", "Copy Source must mention the source bucket and key: sourcebucket/sourcekey.")
	}
	return bucket, key, nil
}

func (g *Gateway) copyObject(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	dst, err := parseKey(rc.bucket, rc.object)
	if err != nil {
		return err
	}
	sb, sk, err := copySource(r.Header.Get("X-Amz-Copy-Source"))
	if err != nil {
		return err
	}
	if !rc.key.allows(sb, PermRead) {
		return errCode("AccessDenied", "")
	}
	src, err := parseKey(sb, sk)
	if err != nil {
		return err
	}
	sin, som, err := g.statPath(ctx, src)
	if err != nil {
		return err
	}
	setag := etagFor(sin, som)
	if err := checkReadConditions(r.Header, setag, time.Unix(0, sin.Mtime), "X-Amz-Copy-Source-"); err != nil {
		return err
	}
	if _, err := g.bucketInode(ctx, rc.bucket); err != nil {
		return err
	}
	cond, err := writeCondOf(r.Header)
	if err != nil {
		return err
	}
	replace := strings.EqualFold(r.Header.Get("X-Amz-Metadata-Directive"), "REPLACE")
	om := &objectMeta{}
	if som != nil && som.Gen == sin.Gen {
		*om = *som
	} else if som != nil {
		om.Headers, om.Meta = som.Headers, som.Meta
	}
	if replace {
		nm, err := metaFromRequest(r.Header)
		if err != nil {
			return err
		}
		om.Headers, om.Meta = nm.Headers, nm.Meta
	}
	var tags []tag
	replaceTags := strings.EqualFold(r.Header.Get("X-Amz-Tagging-Directive"), "REPLACE")
	if replaceTags {
		if tags, err = tagsFromHeader(r.Header.Get("X-Amz-Tagging")); err != nil {
			return err
		}
	} else {
		tags, _ = g.loadTags(ctx, sin.ID)
	}
	lastMod := time.Now()
	if src.bucket == dst.bucket && src.key == dst.key {
		if !replace && !replaceTags {
			return errCode("InvalidRequest", "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
		}
		// In place: only the metadata changes, the data and its ETag stay.
		om.Gen, om.ETag = sin.Gen, setag
		if err := g.storeMeta(ctx, sin.ID, om); err != nil {
			return err
		}
		if replaceTags {
			if err := g.storeTags(ctx, sin.ID, tags); err != nil {
				return err
			}
		}
		return writeXML(w, copyObjectResult{NS: s3NS, ETag: quoteETag(setag), LastModified: s3Time(lastMod)})
	}
	if src.dir != dst.dir {
		return errCode("InvalidArgument", "A directory key (ending in '/') can only be copied to a directory key.")
	}
	if dst.dir {
		om.ETag = emptyMD5
		if err := g.putMarker(discardHeaders{w}, r, &reqCtx{id: rc.id, key: rc.key, size: 0, body: strings.NewReader("")}, dst, om, cond); err != nil {
			return err
		}
		return writeXML(w, copyObjectResult{NS: s3NS, ETag: quoteETag(emptyMD5), LastModified: s3Time(lastMod)})
	}
	f, err := g.fs.OpenInode(ctx, sin, nil)
	if err != nil {
		return err
	}
	var spec *checksumSpec
	if om.ChecksumAlgo != "" {
		spec = &checksumSpec{algo: om.ChecksumAlgo}
	}
	st, err := g.stage(ctx, rc, &fileReader{ctx: ctx, f: f, end: int64(sin.Length)}, int64(sin.Length), maxPutSize, spec, "")
	if err != nil {
		return err
	}
	published := false
	defer func() {
		if !published {
			g.discard(st.name)
		}
	}()
	om.Gen, om.ETag, om.Parts = st.in.Gen, st.md5, nil
	if spec != nil {
		om.Checksum = st.sum
	}
	if err := g.storeMeta(ctx, st.in.ID, om); err != nil {
		return err
	}
	if len(tags) > 0 {
		if err := g.storeTags(ctx, st.in.ID, tags); err != nil {
			return err
		}
	}
	if err := g.publish(ctx, g.stagingIno, st.name, dst, rc.creds(), cond, false); err != nil {
		return err
	}
	published = true
	res := copyObjectResult{NS: s3NS, ETag: quoteETag(st.md5), LastModified: s3Time(time.Unix(0, st.in.Mtime))}
	return writeXML(w, res)
}

// discardHeaders lets a handler that answers on its own (putMarker) be
// reused inside another one that writes the real response.
type discardHeaders struct{ http.ResponseWriter }

func (d discardHeaders) Header() http.Header       { return http.Header{} }
func (d discardHeaders) WriteHeader(int)           {}
func (d discardHeaders) Write([]byte) (int, error) { return 0, nil }

// renameObject is S3's RenameObject (PUT ?renameObject with
// x-amz-rename-source): one metadata transaction, any size; a source key
// ending in '/' renames the whole directory.
func (g *Gateway) renameObject(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	dst, err := parseKey(rc.bucket, rc.object)
	if err != nil {
		return err
	}
	raw := r.Header.Get("X-Amz-Rename-Source")
	if raw == "" {
		return errCode("InvalidArgument", "x-amz-rename-source is required.")
	}
	dv, err := url.PathUnescape(raw)
	if err != nil {
		return errCode("InvalidArgument", "x-amz-rename-source is not URL-encoded properly.")
	}
	dv = strings.TrimPrefix(dv, "/")
	// "bucket/key" like a copy source, or a bare key of the same bucket.
	if k, ok := strings.CutPrefix(dv, rc.bucket+"/"); ok {
		dv = k
	}
	src, err := parseKey(rc.bucket, dv)
	if err != nil {
		return err
	}
	if src.dir != dst.dir {
		return errCode("InvalidArgument", "A key ending in '/' (a directory) can only be renamed to another key ending in '/'.")
	}
	var sin metaapi.Inode
	var som *objectMeta
	if src.dir {
		// Any directory moves, implicit or not: its objects are what count.
		if sin, err = g.meta.Resolve(ctx, src.path(), false); err != nil || sin.Type != metaapi.TypeDir {
			return errCode("NoSuchKey", "")
		}
	} else if sin, som, err = g.statPath(ctx, src); err != nil {
		return err
	}
	if err := checkReadConditions(r.Header, etagFor(sin, som), time.Unix(0, sin.Mtime), "X-Amz-Rename-Source-"); err != nil {
		return err
	}
	cond, err := writeCondOf(r.Header)
	if err != nil {
		return err
	}
	if src.key == dst.key {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	sparent, err := g.meta.Resolve(ctx, src.parentPath(), true)
	if err != nil {
		return err
	}
	if err := g.publish(ctx, sparent.ID, src.name(), dst, rc.creds(), cond, true); err != nil {
		if errnoOf(err) == syscall.EINVAL {
			return errCode("InvalidArgument", "A directory cannot be renamed into itself.")
		}
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
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
		c := &checksums{}
		switch om.ChecksumAlgo {
		case "crc32":
			c.ChecksumCRC32 = om.Checksum
		case "crc32c":
			c.ChecksumCRC32C = om.Checksum
		case "crc64nvme":
			c.ChecksumCRC64NVME = om.Checksum
		case "sha1":
			c.ChecksumSHA1 = om.Checksum
		case "sha256":
			c.ChecksumSHA256 = om.Checksum
		}
		res.Checksum = c
	}
	if want["ObjectParts"] && valid && len(om.Parts) > 0 {
		res.ObjectParts = &objParts{TotalPartsCount: len(om.Parts)}
	}
	w.Header().Set("Last-Modified", time.Unix(0, in.Mtime).UTC().Format(http.TimeFormat))
	return writeXML(w, res)
}

var _ = json.Marshal
