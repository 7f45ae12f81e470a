package gateway

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Object metadata lives in extended attributes of the file (or of the
// directory, for a marker), so the POSIX view carries it too:
//
//	user.s3.object   JSON objectMeta: ETag (with the Gen it was computed for),
//	                 system headers, x-amz-meta-*, checksum, part sizes
//	user.s3.parts.N  the part sizes and checksums of an upload of too many
//	                 parts for user.s3.object, JSON cut in pieces (N from 0)
//	user.s3.tagging  JSON tag set
//	user.s3.acl      on a bucket directory: "public-read"
const (
	xattrObject  = "user.s3.object"
	xattrTagging = "user.s3.tagging"
	xattrACL     = "user.s3.acl"
	xattrUpload  = "user.s3.upload"
	xattrPart    = "user.s3.part."
	xattrStride  = "user.s3.stride"
	xattrParts   = "user.s3.parts."
)

// maxObjectRecord bounds the user.s3.object record.
const maxObjectRecord = 60 << 10

// maxUserMeta is S3's limit on the size of x-amz-meta-* headers.
const maxUserMeta = 2 << 10

// objectMeta is the user.s3.object record.
type objectMeta struct {
	// Gen is the inode generation ETag and Checksum were computed for; once
	// the file changes through POSIX they no longer describe it.
	Gen  uint64 `json:"gen"`
	ETag string `json:"etag"` // without quotes
	// Headers: Content-Type, Cache-Control, Content-Disposition,
	// Content-Encoding, Content-Language, Expires (canonical names).
	Headers map[string]string `json:"headers,omitempty"`
	// Meta: user metadata, names lower case without the x-amz-meta- prefix.
	Meta         map[string]string `json:"meta,omitempty"`
	ChecksumAlgo string            `json:"checksum_algo,omitempty"`
	Checksum     string            `json:"checksum,omitempty"` // base64
	ChecksumType string            `json:"checksum_type,omitempty"`
	// Parts: sizes of a multipart object's parts (GET ?partNumber=).
	Parts []int64 `json:"parts,omitempty"`
	// PartSums: the parts' checksums (base64, ChecksumAlgo), when the
	// upload had one (GetObjectAttributes lists them).
	PartSums []string `json:"part_sums,omitempty"`
	// Tags counts user.s3.tagging's tags, so GET answers
	// x-amz-tagging-count without reading them.
	Tags int `json:"tags,omitempty"`
	// PartsPieces counts the user.s3.parts.N pieces Parts and PartSums are
	// kept in when the record could not hold them (0: in the record).
	PartsPieces int `json:"parts_pieces,omitempty"`
}

// partsRecord is what user.s3.parts.N hold, once joined.
type partsRecord struct {
	Parts    []int64  `json:"parts"`
	PartSums []string `json:"part_sums,omitempty"`
}

// systemHeaders are the headers stored with an object and returned on GET.
var systemHeaders = []string{"Content-Type", "Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires"}

// metaFromRequest collects the headers and user metadata of a PUT, a copy
// with REPLACE or a CreateMultipartUpload.
func metaFromRequest(h http.Header) (*objectMeta, error) {
	om := &objectMeta{Headers: map[string]string{}, Meta: map[string]string{}}
	for _, name := range systemHeaders {
		if v := h.Get(name); v != "" {
			om.Headers[name] = v
		}
	}
	// aws-chunked is transport framing, never part of the stored encoding.
	if ce := om.Headers["Content-Encoding"]; ce != "" {
		var keep []string
		for _, p := range strings.Split(ce, ",") {
			if p = strings.TrimSpace(p); p != "" && p != "aws-chunked" {
				keep = append(keep, p)
			}
		}
		if len(keep) == 0 {
			delete(om.Headers, "Content-Encoding")
		} else {
			om.Headers["Content-Encoding"] = strings.Join(keep, ",")
		}
	}
	size := 0
	for name, vals := range h {
		lname := strings.ToLower(name)
		if m, ok := strings.CutPrefix(lname, "x-amz-meta-"); ok && m != "" {
			v := strings.Join(vals, ",")
			om.Meta[m] = v
			size += len(m) + len(v)
		}
	}
	if size > maxUserMeta {
		return nil, errCode("MetadataTooLarge", "Your metadata headers are %d bytes; the limit is %d.", size, maxUserMeta)
	}
	return om, nil
}

// etagFor returns the ETag of an inode given its stored metadata (om may be
// nil): the stored one while the file is the generation it was computed
// for, else one derived from (inode, generation, length), which changes on
// every modification. Never empty.
func etagFor(in metaapi.Inode, om *objectMeta) string {
	if in.Type == metaapi.TypeDir {
		if om != nil && om.ETag != "" {
			return om.ETag
		}
		return emptyMD5
	}
	if om != nil && om.ETag != "" && om.Gen == in.Gen {
		return om.ETag
	}
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], in.ID)
	binary.LittleEndian.PutUint64(b[8:], in.Gen)
	binary.LittleEndian.PutUint64(b[16:], in.Length)
	s := sha256.Sum256(b[:])
	// "-0": not an MD5 of the content (clients then do not compare it with
	// one), and no multipart form either.
	return hex.EncodeToString(s[:16]) + "-0"
}

var emptyMD5 = func() string { s := md5.Sum(nil); return hex.EncodeToString(s[:]) }()

// loadMeta reads an inode's user.s3.object (nil if absent or unreadable:
// files written through POSIX have none).
func (g *Gateway) loadMeta(ctx context.Context, ino uint64) (*objectMeta, error) {
	v, err := g.meta.GetXattr(ctx, ino, xattrObject)
	if err != nil {
		if e := errnoOf(err); e == syscall.ENODATA || e == syscall.ENOENT {
			return nil, nil
		}
		return nil, err
	}
	om := new(objectMeta)
	if json.Unmarshal(v, om) != nil {
		return nil, nil
	}
	if om.PartsPieces > 0 {
		var joined []byte
		for i := range om.PartsPieces {
			piece, err := g.meta.GetXattr(ctx, ino, xattrParts+strconv.Itoa(i))
			if err != nil {
				if e := errnoOf(err); e == syscall.ENODATA || e == syscall.ENOENT {
					return nil, nil
				}
				return nil, err
			}
			joined = append(joined, piece...)
		}
		var pr partsRecord
		if json.Unmarshal(joined, &pr) != nil {
			return nil, nil
		}
		om.Parts, om.PartSums = pr.Parts, pr.PartSums
	}
	return om, nil
}

// metaCache keeps object records by inode, valid while the inode's ctime
// and generation are the ones they were read at: every xattr change moves
// the ctime and every data change the generation, so a hit is never stale.
type metaCache struct {
	mu sync.Mutex
	m  map[uint64]cachedMeta
}

type cachedMeta struct {
	ctime int64
	gen   uint64
	om    *objectMeta
}

const metaCacheMax = 200_000

// metaOf returns the object record of in (the inode as just read),
// through the cache. Callers must not modify the result.
func (g *Gateway) metaOf(ctx context.Context, in metaapi.Inode) (*objectMeta, error) {
	c := &g.mcache
	c.mu.Lock()
	e, ok := c.m[in.ID]
	c.mu.Unlock()
	if ok && e.ctime == in.Ctime && e.gen == in.Gen {
		return e.om, nil
	}
	om, err := g.loadMeta(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= metaCacheMax {
		c.m = make(map[uint64]cachedMeta)
	}
	c.m[in.ID] = cachedMeta{ctime: in.Ctime, gen: in.Gen, om: om}
	c.mu.Unlock()
	return om, nil
}

// primeMeta caches the object record a listing page brought along (raw is
// the user.s3.object value, nil if the file has none), valid for the inode
// as the same snapshot read it.
func (g *Gateway) primeMeta(in metaapi.Inode, raw []byte) {
	var om *objectMeta
	if raw != nil {
		om = new(objectMeta)
		if json.Unmarshal(raw, om) != nil {
			om = nil
		}
		if om != nil && om.PartsPieces > 0 {
			return // its parts are elsewhere: metaOf reads them when asked
		}
	}
	c := &g.mcache
	c.mu.Lock()
	if c.m == nil || len(c.m) >= metaCacheMax {
		c.m = make(map[uint64]cachedMeta)
	}
	c.m[in.ID] = cachedMeta{ctime: in.Ctime, gen: in.Gen, om: om}
	c.mu.Unlock()
}

func (g *Gateway) storeMeta(ctx context.Context, ino uint64, om *objectMeta) error {
	rec := *om
	rec.PartsPieces = 0
	v, err := json.Marshal(&rec)
	if err != nil {
		return err
	}
	if len(v) > maxObjectRecord && len(om.Parts) > 0 {
		// An upload of thousands of parts: its sizes and checksums go in
		// pieces beside the record.
		pv, err := json.Marshal(partsRecord{Parts: om.Parts, PartSums: om.PartSums})
		if err != nil {
			return err
		}
		n := 0
		for ; len(pv) > 0; n++ {
			piece := pv[:min(len(pv), maxObjectRecord)]
			pv = pv[len(piece):]
			if err := g.meta.SetXattr(ctx, ino, xattrParts+strconv.Itoa(n), piece, 0); err != nil {
				return err
			}
		}
		rec.Parts, rec.PartSums, rec.PartsPieces = nil, nil, n
		if v, err = json.Marshal(&rec); err != nil {
			return err
		}
	}
	if len(v) > maxObjectRecord {
		return errCode("MetadataTooLarge", "")
	}
	return g.meta.SetXattr(ctx, ino, xattrObject, v, 0)
}

// quoteETag adds the quotes ETags travel with.
func quoteETag(e string) string { return `"` + e + `"` }

// etagMatches compares an If-Match/If-None-Match list with an ETag ("*"
// matches anything; weak validators compare by value).
func etagMatches(header, etag string) bool {
	for _, c := range strings.Split(header, ",") {
		c = strings.TrimSpace(c)
		c = strings.TrimPrefix(c, "W/")
		if c == "*" || strings.Trim(c, `"`) == etag {
			return true
		}
	}
	return false
}
