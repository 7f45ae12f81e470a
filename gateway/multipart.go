package gateway

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
)

// Multipart uploads live in the namespace under /.flyfs-s3/uploads/<id>/:
// the directory carries the upload's record and one xattr per part; the
// file "data" receives parts at their final offsets. The first part of at
// least minPartSize bytes fixes the stride; every part no larger than the
// stride is written straight to (n-1)*stride in "data", anything else to a
// file of its own. When the completed parts are 1..N, all in "data" and all
// but the last exactly one stride, Complete trims "data" to its length and
// renames it into place: no byte moves. Other uploads are assembled into a
// new file, part by part.

const (
	maxParts    = 10000
	maxPartSize = 5 << 30
	dataName    = "data"
)

// minPartSize is S3's least size of a part but the last; a variable only
// so that a test can complete 10 000 parts without 50 GB.
var minPartSize int64 = 5 << 20

// uploadRecord is user.s3.upload on the upload directory.
type uploadRecord struct {
	Bucket    string     `json:"bucket"`
	Key       string     `json:"key"`
	Initiated time.Time  `json:"initiated"`
	Meta      objectMeta `json:"meta"`
	Tags      []tag      `json:"tags,omitempty"`
	ACL       *acl       `json:"acl,omitempty"` // the ACL asked for the object
	// Lock is the object lock the object takes when completed.
	Lock  *metaapi.ObjectLock `json:"lock,omitempty"`
	Owner string              `json:"owner"`
	UID   uint32              `json:"uid"`
	GID   uint32              `json:"gid"`
}

// partRecord is user.s3.part.NNNNN.
type partRecord struct {
	Size     int64     `json:"size"`
	ETag     string    `json:"etag"`
	File     string    `json:"file,omitempty"` // "": in "data" at (n-1)*stride
	Checksum string    `json:"checksum,omitempty"`
	Modified time.Time `json:"modified"`
	// Src: a part copied from an object is not copied; it is the bytes at
	// SrcOff of Src, a clone of the object in the upload's directory
	// (sharing its chunks, pinned as it was at the copy; copypart.go).
	Src    string `json:"src,omitempty"`
	SrcOff int64  `json:"src_off,omitempty"`
}

func partXattr(n int) string { return fmt.Sprintf("%s%05d", xattrPart, n) }

type upload struct {
	id     string
	dir    metaapi.Inode
	rec    uploadRecord
	dataIn metaapi.Inode
}

func (g *Gateway) openUpload(ctx context.Context, rc *reqCtx, id string) (*upload, error) {
	if id == "" || len(id) > 64 || strings.ContainsAny(id, "/\x00") || id == "." || id == ".." {
		return nil, errCode("NoSuchUpload", "")
	}
	dir, err := g.meta.Lookup(ctx, g.uploadsIno, id)
	if err != nil {
		return nil, nsError(err, uploadLookup, "")
	}
	v, err := g.meta.GetXattr(ctx, dir.ID, xattrUpload)
	if err != nil {
		return nil, nsError(err, uploadLookup, "")
	}
	u := &upload{id: id, dir: dir}
	if json.Unmarshal(v, &u.rec) != nil || u.rec.Bucket != rc.bucket || u.rec.Key != rc.object {
		return nil, errCode("NoSuchUpload", "")
	}
	return u, nil
}

func (g *Gateway) createMultipartUpload(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	o, err := parseKey(rc.bucket, rc.object)
	if err != nil {
		return err
	}
	if o.dir {
		return errCode("InvalidArgument", "A key ending in '/' is a directory and cannot be uploaded in parts.")
	}
	if _, err := g.bucketInode(ctx, rc.bucket); err != nil {
		return err
	}
	om, err := metaFromRequest(r.Header)
	if err != nil {
		return err
	}
	if a := strings.ToLower(r.Header.Get("X-Amz-Checksum-Algorithm")); a != "" {
		if newChecksumHash(a) == nil {
			return errCode("InvalidRequest", "Checksum algorithm %q is not supported.", a)
		}
		om.ChecksumAlgo = a
	}
	tags, err := tagsFromHeader(r.Header.Get("X-Amz-Tagging"))
	if err != nil {
		return err
	}
	oacl, hasACL, err := g.requestACL(ctx, r.Header, rc.bucket)
	if err != nil {
		return err
	}
	lock, err := g.newObjectLock(ctx, r.Header, rc.bucket)
	if err != nil {
		return err
	}
	id := strings.ToLower(newRequestID() + newRequestID())
	dir, err := g.meta.Mkdir(ctx, g.uploadsIno, id, 0o700, rc.creds())
	if err != nil {
		return err
	}
	cr := rc.creds()
	rec := uploadRecord{Bucket: rc.bucket, Key: rc.object, Initiated: time.Now().UTC(), Meta: *om, Tags: tags,
		Owner: rc.ownerID(), UID: cr.UID, GID: cr.GID, Lock: lock}
	if hasACL {
		rec.ACL = &oacl
	}
	v, _ := json.Marshal(rec)
	if err := g.meta.SetXattr(ctx, dir.ID, xattrUpload, v, 0); err != nil {
		return err
	}
	in, session, _, err := g.meta.Create(ctx, dir.ID, dataName, fileMode, os.O_CREATE|os.O_EXCL|os.O_WRONLY, rc.creds())
	if err != nil {
		return err
	}
	if f, err := g.fs.OpenInode(ctx, in, session); err == nil {
		f.CloseContext(ctx)
	}
	if om.ChecksumAlgo != "" {
		w.Header().Set("X-Amz-Checksum-Algorithm", strings.ToUpper(om.ChecksumAlgo))
	}
	return writeXML(w, initiateMultipartUploadResult{NS: s3NS, Bucket: rc.bucket, Key: rc.object, UploadID: id})
}

func partNumberOf(r *http.Request) (int, error) {
	n, err := strconv.Atoi(r.URL.Query().Get("partNumber"))
	if err != nil || n < 1 || n > maxParts {
		return 0, errCode("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive.")
	}
	return n, nil
}

// stride returns the upload's part stride, claiming it with size when none
// is set yet and size qualifies (0: none).
func (g *Gateway) stride(ctx context.Context, u *upload, size int64) (int64, error) {
	v, err := g.meta.GetXattr(ctx, u.dir.ID, xattrStride)
	if err == nil {
		return strconv.ParseInt(string(v), 10, 64)
	}
	if errnoOf(err) != syscall.ENODATA {
		return 0, err
	}
	if size < minPartSize {
		return 0, nil
	}
	err = g.meta.SetXattr(ctx, u.dir.ID, xattrStride, []byte(strconv.FormatInt(size, 10)), 1 /* XATTR_CREATE */)
	if errnoOf(err) == syscall.EEXIST {
		return g.stride(ctx, u, 0)
	}
	if err != nil {
		return 0, err
	}
	return size, nil
}

// writePart stores part n of u from body.
func (g *Gateway) writePart(ctx context.Context, rc *reqCtx, u *upload, n int, body io.Reader, size int64, spec *checksumSpec, contentMD5 string) (*partRecord, error) {
	if size > maxPartSize {
		return nil, errCode("EntityTooLarge", "A part may be at most 5 GiB.")
	}
	stride := int64(0)
	if size >= 0 {
		var err error
		if stride, err = g.stride(ctx, u, size); err != nil {
			return nil, err
		}
	}
	rec := &partRecord{Modified: time.Now().UTC()}
	var f *client.File
	var off int64
	if stride > 0 && size <= stride {
		in, session, err := g.meta.Open(ctx, g.dataIno(ctx, u), os.O_WRONLY, rc.creds())
		if err != nil {
			return nil, err
		}
		if f, err = g.fs.OpenInode(ctx, in, session); err != nil {
			return nil, err
		}
		off = int64(n-1) * stride
	} else {
		rec.File = fmt.Sprintf("p%05d.%s", n, strings.ToLower(newRequestID()))
		in, session, _, err := g.meta.Create(ctx, u.dir.ID, rec.File, fileMode, os.O_CREATE|os.O_EXCL|os.O_WRONLY, rc.creds())
		if err != nil {
			return nil, err
		}
		if f, err = g.fs.OpenInode(ctx, in, session); err != nil {
			return nil, err
		}
	}
	m := etagMD5.New()
	hashes := []hash.Hash{m}
	var ch hash.Hash
	if spec != nil {
		ch = newChecksumHash(spec.algo)
		hashes = append(hashes, ch)
	}
	limit := int64(maxPartSize)
	if rec.File == "" {
		limit = stride // never spill into the next part's slot
	}
	got, err := copyInSized(bodyCtx(ctx), f, off, body, size, limit, hashes...)
	if cerr := f.CloseContext(ctx); err == nil {
		err = cerr
	}
	if err == nil {
		err = g.fs.SyncData(ctx) // the relaxed chunk writes, before the part's record
	}
	if err == nil && size >= 0 && got != size {
		err = errCode("IncompleteBody", "")
	}
	if err == nil && contentMD5 != "" {
		want, derr := base64.StdEncoding.DecodeString(contentMD5)
		if derr != nil || hex.EncodeToString(want) != hex.EncodeToString(m.Sum(nil)) {
			err = errCode("BadDigest", "")
		}
	}
	if err == nil && spec != nil {
		rec.Checksum = base64.StdEncoding.EncodeToString(ch.Sum(nil))
		want := spec.expected
		if spec.trailer && rc.chunked != nil {
			want = rc.chunked.Trailer[checksumHeader(spec.algo)]
		}
		if want != "" && want != rec.Checksum {
			err = errCode("BadDigest", "The %s you specified did not match the calculated checksum.", checksumHeader(spec.algo))
		}
	}
	if err != nil {
		if rec.File != "" {
			g.meta.Unlink(context.Background(), metaapi.RemoveReq{Parent: u.dir.ID, Name: rec.File})
		}
		return nil, err
	}
	rec.Size, rec.ETag = got, hex.EncodeToString(m.Sum(nil))
	old, _ := g.loadPart(ctx, u, n)
	v, _ := json.Marshal(rec)
	if err := g.meta.SetXattr(ctx, u.dir.ID, partXattr(n), v, 0); err != nil {
		return nil, err
	}
	if old != nil && old.File != "" && old.File != rec.File {
		g.meta.Unlink(ctx, metaapi.RemoveReq{Parent: u.dir.ID, Name: old.File})
	}
	return rec, nil
}

func (g *Gateway) dataIno(ctx context.Context, u *upload) uint64 {
	if u.dataIn.ID == 0 {
		if in, err := g.meta.Lookup(ctx, u.dir.ID, dataName); err == nil {
			u.dataIn = in
		}
	}
	return u.dataIn.ID
}

func (g *Gateway) loadPart(ctx context.Context, u *upload, n int) (*partRecord, error) {
	v, err := g.meta.GetXattr(ctx, u.dir.ID, partXattr(n))
	if err != nil {
		if errnoOf(err) == syscall.ENODATA {
			return nil, nil
		}
		return nil, err
	}
	p := new(partRecord)
	if err := json.Unmarshal(v, p); err != nil {
		return nil, err
	}
	return p, nil
}

func (g *Gateway) uploadPart(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	n, err := partNumberOf(r)
	if err != nil {
		return err
	}
	u, err := g.openUpload(ctx, rc, r.URL.Query().Get("uploadId"))
	if err != nil {
		return err
	}
	spec, err := requestChecksum(r.Header)
	if err != nil {
		return err
	}
	rec, err := g.writePart(ctx, rc, u, n, rc.body, rc.size, spec, r.Header.Get("Content-Md5"))
	if err != nil {
		return err
	}
	w.Header().Set("ETag", quoteETag(rec.ETag))
	if spec != nil {
		w.Header().Set(checksumHeader(spec.algo), rec.Checksum)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (g *Gateway) uploadPartCopy(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	n, err := partNumberOf(r)
	if err != nil {
		return err
	}
	u, err := g.openUpload(ctx, rc, r.URL.Query().Get("uploadId"))
	if err != nil {
		return err
	}
	_, sin, _, err := g.copySourceObject(ctx, r, rc)
	if err != nil {
		return err
	}
	size := int64(sin.Length)
	start, length := int64(0), size
	if rv := r.Header.Get("X-Amz-Copy-Source-Range"); rv != "" {
		s, e, ok := parseCopyRange(rv)
		if !ok || e >= size {
			return errCode("InvalidArgument", "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy, within the object.")
		}
		start, length = s, e-s+1
	}
	rec, err := g.copyPartShared(ctx, rc, u, n, sin, start, length)
	if err != nil {
		return err
	}
	if rec == nil {
		f, err := g.fs.OpenInode(ctx, sin, nil)
		if err != nil {
			return err
		}
		if rec, err = g.writePart(ctx, rc, u, n, &fileReader{ctx: ctx, f: f, off: start, end: start + length}, length, nil, ""); err != nil {
			return err
		}
	}
	return writeXML(w, copyPartResult{NS: s3NS, ETag: quoteETag(rec.ETag), LastModified: s3Time(rec.Modified)})
}

func parseCopyRange(v string) (int64, int64, bool) {
	spec, ok := strings.CutPrefix(v, "bytes=")
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(spec, "-")
	if !ok {
		return 0, 0, false
	}
	s, err1 := strconv.ParseInt(a, 10, 64)
	e, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || s < 0 || e < s {
		return 0, 0, false
	}
	return s, e, true
}

// loadParts reads the records of the given part numbers in parallel.
func (g *Gateway) loadParts(ctx context.Context, u *upload, nums []int) ([]*partRecord, error) {
	recs := make([]*partRecord, len(nums))
	errs := make([]error, len(nums))
	sem := make(chan struct{}, 16)
	done := make(chan struct{}, len(nums))
	for i, n := range nums {
		sem <- struct{}{}
		go func(i, n int) {
			defer func() { <-sem; done <- struct{}{} }()
			recs[i], errs[i] = g.loadPart(ctx, u, n)
		}(i, n)
	}
	for range nums {
		<-done
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return recs, nil
}

func (g *Gateway) completeMultipartUpload(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	o, err := parseKey(rc.bucket, rc.object)
	if err != nil {
		return err
	}
	u, err := g.openUpload(ctx, rc, r.URL.Query().Get("uploadId"))
	if err != nil {
		return err
	}
	var req completeMultipartUpload
	if err := decodeXML(rc.body, &req); err != nil {
		return err
	}
	if len(req.Parts) == 0 {
		return errCode("MalformedXML", "You must specify at least one part.")
	}
	cond, err := writeCondOf(r.Header)
	if err != nil {
		return err
	}
	cond.lock = u.rec.Lock
	nums := make([]int, len(req.Parts))
	for i, p := range req.Parts {
		if p.PartNumber < 1 || p.PartNumber > maxParts {
			return errCode("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive.")
		}
		if i > 0 && p.PartNumber <= req.Parts[i-1].PartNumber {
			return errCode("InvalidPartOrder", "")
		}
		nums[i] = p.PartNumber
	}
	recs, err := g.loadParts(ctx, u, nums)
	if err != nil {
		return err
	}
	stride, err := g.stride(ctx, u, 0)
	if err != nil {
		return err
	}
	zeroCopy := stride > 0
	etagHash := md5.New()
	var total int64
	sizes := make([]int64, len(recs))
	var sums [][]byte
	var partSums []string
	for i, p := range req.Parts {
		rec := recs[i]
		if rec == nil || strings.Trim(p.ETag, `"`) != rec.ETag {
			return errCode("InvalidPart", "Part %d was not uploaded, or its ETag does not match.", p.PartNumber)
		}
		last := i == len(req.Parts)-1
		if !last && rec.Size < minPartSize {
			return errCode("EntityTooSmall", "Part %d is %d bytes; every part but the last must be at least 5 MiB.", p.PartNumber, rec.Size)
		}
		raw, _ := hex.DecodeString(rec.ETag)
		etagHash.Write(raw)
		if rec.File != "" || rec.Src != "" || p.PartNumber != i+1 || (!last && rec.Size != stride) {
			zeroCopy = false
		}
		if rec.Checksum != "" {
			if b, err := base64.StdEncoding.DecodeString(rec.Checksum); err == nil {
				sums = append(sums, b)
				partSums = append(partSums, rec.Checksum)
			}
		}
		sizes[i] = rec.Size
		total += rec.Size
	}
	if total > metaapi.MaxFileSize {
		return errCode("EntityTooLarge", "")
	}
	om := u.rec.Meta
	var final metaapi.Inode
	finalName := dataName
	if whole, ok := g.wholeSharedCopy(ctx, u, recs, nums); ok {
		// The parts are one object's bytes in order, end to end: its pinned
		// clone is the result (no byte moves).
		final, finalName, zeroCopy = whole, recs[0].Src, true
	} else if zeroCopy {
		// Publishing only: trim "data" to the parts' end (a higher part may
		// have been uploaded and left out) and rename it into place below.
		final, err = g.meta.SetAttr(ctx, g.dataIno(ctx, u), metaapi.SetAttrReq{Mask: metaapi.SetSize, Size: uint64(total)})
		if err != nil {
			return err
		}
	} else {
		finalName = "assembled." + strings.ToLower(newRequestID())
		if final, err = g.assemble(ctx, rc, u, finalName, recs, stride, nums); err != nil {
			return err
		}
	}
	g.metrics.completions.WithLabelValues(strconv.FormatBool(zeroCopy)).Inc()
	etag := hex.EncodeToString(etagHash.Sum(nil)) + "-" + strconv.Itoa(len(req.Parts))
	om.Gen, om.ETag, om.Parts = final.Gen, etag, sizes
	if om.ChecksumAlgo != "" && len(sums) == len(recs) {
		h := newChecksumHash(om.ChecksumAlgo)
		for _, s := range sums {
			h.Write(s)
		}
		om.Checksum = base64.StdEncoding.EncodeToString(h.Sum(nil)) + "-" + strconv.Itoa(len(recs))
		om.ChecksumType = "COMPOSITE"
		om.PartSums = partSums // beside the record when they outgrow it (storeMeta)
	}
	if err := g.storeMeta(ctx, final.ID, &om); err != nil {
		return err
	}
	if len(u.rec.Tags) > 0 {
		if err := g.storeTags(ctx, final.ID, u.rec.Tags); err != nil {
			return err
		}
	}
	if u.rec.ACL != nil {
		if err := g.storeACL(ctx, final.ID, *u.rec.ACL, true); err != nil {
			return err
		}
	}
	cr := client.Creds{UID: u.rec.UID, GID: u.rec.GID}
	if err := g.publish(ctx, w.Header(), u.dir.ID, finalName, o, cr, cond, false); err != nil {
		return err
	}
	if err := g.meta.RemoveAll(ctx, g.uploadsIno, u.id); err != nil && errnoOf(err) != syscall.ENOENT {
		g.log.Warn("s3 gateway: could not remove a completed upload's directory", "upload", u.id, "err", err)
	}
	return writeXML(w, completeMultipartUploadResult{NS: s3NS, Location: "/" + rc.bucket + "/" + rc.object, Bucket: rc.bucket, Key: rc.object, ETag: quoteETag(etag)})
}

// assemble copies the parts, in order, into a new file of the upload.
func (g *Gateway) assemble(ctx context.Context, rc *reqCtx, u *upload, name string, recs []*partRecord, stride int64, nums []int) (metaapi.Inode, error) {
	in, session, _, err := g.meta.Create(ctx, u.dir.ID, name, fileMode, os.O_CREATE|os.O_EXCL|os.O_WRONLY, client.Creds{UID: u.rec.UID, GID: u.rec.GID})
	if err != nil {
		return in, err
	}
	out, err := g.fs.OpenInode(ctx, in, session)
	if err != nil {
		return in, err
	}
	var off int64
	for i, rec := range recs {
		var src metaapi.Inode
		start := int64(0)
		switch {
		case rec.Src != "":
			src, err = g.meta.Lookup(ctx, u.dir.ID, rec.Src)
			start = rec.SrcOff
		case rec.File == "":
			src, err = g.meta.Stat(ctx, g.dataIno(ctx, u))
			start = int64(nums[i]-1) * stride
		default:
			src, err = g.meta.Lookup(ctx, u.dir.ID, rec.File)
		}
		if err != nil {
			out.CloseContext(ctx)
			return in, err
		}
		f, err := g.fs.OpenInode(ctx, src, nil)
		if err != nil {
			out.CloseContext(ctx)
			return in, err
		}
		n, err := copyIn(ctx, out, off, &fileReader{ctx: ctx, f: f, off: start, end: start + rec.Size}, rec.Size)
		if err == nil && n != rec.Size {
			err = fmt.Errorf("part %d: copied %d of %d bytes", nums[i], n, rec.Size)
		}
		if err != nil {
			out.CloseContext(ctx)
			return in, err
		}
		off += n
	}
	if err := out.CloseContext(ctx); err != nil {
		return in, err
	}
	return out.Inode(), nil
}

func (g *Gateway) abortMultipartUpload(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	u, err := g.openUpload(ctx, rc, r.URL.Query().Get("uploadId"))
	if err != nil {
		return err
	}
	if err := g.meta.RemoveAll(ctx, g.uploadsIno, u.id); err != nil {
		return nsError(err, uploadLookup, "")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (g *Gateway) listParts(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	q := r.URL.Query()
	u, err := g.openUpload(ctx, rc, q.Get("uploadId"))
	if err != nil {
		return err
	}
	maxParts := 1000
	if v := q.Get("max-parts"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errCode("InvalidArgument", "max-parts must be a non-negative integer.")
		}
		maxParts = min(n, 1000)
	}
	marker := 0
	if v := q.Get("part-number-marker"); v != "" {
		if marker, err = strconv.Atoi(v); err != nil || marker < 0 {
			return errCode("InvalidArgument", "part-number-marker must be a non-negative integer.")
		}
	}
	names, err := g.meta.ListXattr(ctx, u.dir.ID)
	if err != nil {
		return err
	}
	var nums []int
	for _, nm := range names {
		if s, ok := strings.CutPrefix(nm, xattrPart); ok {
			if n, err := strconv.Atoi(s); err == nil && n > marker {
				nums = append(nums, n)
			}
		}
	}
	sort.Ints(nums)
	res := listPartsResult{NS: s3NS, Bucket: rc.bucket, Key: rc.object, UploadID: u.id, PartNumberMarker: marker, MaxParts: maxParts,
		Initiator: owner{ID: u.rec.Owner, DisplayName: u.rec.Owner}, Owner: owner{ID: u.rec.Owner, DisplayName: u.rec.Owner}, StorageClass: "STANDARD"}
	if len(nums) > maxParts {
		nums, res.IsTruncated = nums[:maxParts], true
	}
	recs, err := g.loadParts(ctx, u, nums)
	if err != nil {
		return err
	}
	for i, rec := range recs {
		if rec == nil {
			continue
		}
		res.Parts = append(res.Parts, partInfo{PartNumber: nums[i], LastModified: s3Time(rec.Modified), ETag: quoteETag(rec.ETag), Size: rec.Size})
	}
	if len(nums) > 0 {
		res.NextPartNumberMarker = nums[len(nums)-1]
	}
	return writeXML(w, res)
}

func (g *Gateway) listMultipartUploads(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	if _, err := g.bucketInode(ctx, rc.bucket); err != nil {
		return err
	}
	q := r.URL.Query()
	prefix, delim := q.Get("prefix"), q.Get("delimiter")
	keyMarker, idMarker := q.Get("key-marker"), q.Get("upload-id-marker")
	encode, err := encodingOf(q)
	if err != nil {
		return err
	}
	maxUploads := 1000
	if v := q.Get("max-uploads"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errCode("InvalidArgument", "max-uploads must be a non-negative integer.")
		}
		maxUploads = min(n, 1000)
	}
	var all []uploadInfo
	err = g.eachUpload(ctx, func(id string, rec uploadRecord) error {
		if rec.Bucket == rc.bucket && strings.HasPrefix(rec.Key, prefix) {
			all = append(all, uploadInfo{Key: rec.Key, UploadID: id, Initiator: owner{ID: rec.Owner, DisplayName: rec.Owner},
				Owner: owner{ID: rec.Owner, DisplayName: rec.Owner}, StorageClass: "STANDARD", Initiated: s3Time(rec.Initiated)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Key != all[j].Key {
			return all[i].Key < all[j].Key
		}
		return all[i].Initiated < all[j].Initiated
	})
	res := listMultipartUploadsResult{NS: s3NS, Bucket: rc.bucket, KeyMarker: encode(keyMarker), UploadIDMarker: idMarker, Prefix: encode(prefix), Delimiter: encode(delim), MaxUploads: maxUploads}
	if q.Get("encoding-type") == "url" {
		res.EncodingType = "url"
	}
	lastCP := ""
	for _, up := range all {
		if keyMarker != "" && (up.Key < keyMarker || (up.Key == keyMarker && (idMarker == "" || up.UploadID <= idMarker))) {
			continue
		}
		if delim != "" {
			if i := strings.Index(up.Key[len(prefix):], delim); i >= 0 {
				cp := up.Key[:len(prefix)+i+len(delim)]
				if cp != lastCP {
					if len(res.Uploads)+len(res.CommonPrefixes) >= maxUploads {
						res.IsTruncated = true
						break
					}
					res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: encode(cp)})
					lastCP = cp
				}
				continue
			}
		}
		if len(res.Uploads)+len(res.CommonPrefixes) >= maxUploads {
			res.IsTruncated = true
			break
		}
		res.NextKeyMarker, res.NextUploadIDMarker = encode(up.Key), up.UploadID
		up.Key = encode(up.Key)
		res.Uploads = append(res.Uploads, up)
	}
	return writeXML(w, res)
}

// eachUpload calls fn with every multipart upload in progress (its id and
// record), of every bucket; uploads whose record is unreadable are passed
// over.
func (g *Gateway) eachUpload(ctx context.Context, fn func(id string, rec uploadRecord) error) error {
	after := ""
	for {
		ents, more, err := g.meta.ReadDir(ctx, g.uploadsIno, after, 1000, false)
		if err != nil {
			return err
		}
		for _, e := range ents {
			after = e.Name
			v, err := g.meta.GetXattr(ctx, e.Ino, xattrUpload)
			if err != nil {
				continue
			}
			var rec uploadRecord
			if json.Unmarshal(v, &rec) != nil {
				continue
			}
			if err := fn(e.Name, rec); err != nil {
				return err
			}
		}
		if !more || len(ents) == 0 {
			return nil
		}
	}
}
