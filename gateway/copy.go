package gateway

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
)

// copySource parses x-amz-copy-source ("[/]bucket/key[?versionId=...]");
// version is "" when none is named.
func copySource(v string) (bucket, key, version string, err error) {
	if i := strings.Index(v, "?versionId="); i >= 0 {
		version = v[i+len("?versionId="):]
		if err := checkVersionIDSyntax(version); err != nil {
			return "", "", "", err
		}
		v = v[:i]
	}
	dv, err := url.PathUnescape(v)
	if err != nil {
		return "", "", "", errCode("InvalidArgument", "Copy Source must mention the source bucket and key: sourcebucket/sourcekey.")
	}
	dv = strings.TrimPrefix(dv, "/")
	bucket, key, ok := strings.Cut(dv, "/")
	if !ok || bucket == "" || key == "" {
		return "", "", "", errCode("InvalidArgument", "Copy Source must mention the source bucket and key: sourcebucket/sourcekey.")
	}
	return bucket, key, version, nil
}

// copySourceObject resolves the request's X-Amz-Copy-Source as a GET of it
// would be checked: a bucket that is one (a valid name, an existing top-level
// directory: never the staging area or another directory at the top), read
// permission on it, a valid key, and the source's preconditions
// (x-amz-copy-source-if-*).
func (g *Gateway) copySourceObject(ctx context.Context, r *http.Request, rc *reqCtx) (objectPath, metaapi.Inode, *objectMeta, error) {
	sb, sk, sv, err := copySource(r.Header.Get("X-Amz-Copy-Source"))
	if err != nil {
		return objectPath{}, metaapi.Inode{}, nil, err
	}
	if err := g.decide(r, rc, "GetObject", sb, sk, access.Read); err != nil {
		return objectPath{}, metaapi.Inode{}, nil, err
	}
	if _, err := g.bucketInode(ctx, sb); err != nil {
		return objectPath{}, metaapi.Inode{}, nil, err
	}
	src, err := parseKey(sb, sk)
	if err != nil {
		return objectPath{}, metaapi.Inode{}, nil, err
	}
	var sin metaapi.Inode
	var som *objectMeta
	if sv == "" {
		sin, som, err = g.statPath(ctx, src)
		if err == nil {
			if _, st, verr := g.bucketVersioning(ctx, sb); verr == nil && st != metaapi.Unversioned {
				rc.hdr.Set("X-Amz-Copy-Source-Version-Id", versionOfInode(sin))
			}
		}
	} else {
		h := http.Header{}
		sin, som, err = g.statByVersion(ctx, src, sv, h)
		if err == nil {
			rc.hdr.Set("X-Amz-Copy-Source-Version-Id", sv)
		} else if h.Get("X-Amz-Delete-Marker") != "" {
			// A delete marker cannot be copied: S3 answers 400 here.
			err = errCode("InvalidRequest", "The source of a copy request may not specifically refer to a delete marker by version id.")
		}
	}
	if err != nil {
		return objectPath{}, metaapi.Inode{}, nil, err
	}
	if err := checkReadConditions(r.Header, etagFor(sin, som), time.Unix(0, sin.Mtime), "X-Amz-Copy-Source-"); err != nil {
		return objectPath{}, metaapi.Inode{}, nil, err
	}
	return src, sin, som, nil
}

// isCurrent reports whether in is o's current version (a copy from an
// older version of a key onto it is not a copy onto itself).
func (g *Gateway) isCurrent(ctx context.Context, o objectPath, in metaapi.Inode) bool {
	cur, _, err := g.statPath(ctx, o)
	return err == nil && cur.ID == in.ID
}

// copyObject is CopyObject: the source's bytes are staged (shared with the
// source, or copied) and published as a PUT's are; a copy onto itself
// changes only the metadata.
func (g *Gateway) copyObject(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	dst, err := parseKey(rc.bucket, rc.object)
	if err != nil {
		return err
	}
	src, sin, som, err := g.copySourceObject(ctx, r, rc)
	if err != nil {
		return err
	}
	setag := etagFor(sin, som)
	if _, err := g.bucketInode(ctx, rc.bucket); err != nil {
		return err
	}
	cond, err := writeCondOf(r.Header)
	if err != nil {
		return err
	}
	if !dst.dir {
		if cond.lock, err = g.newObjectLock(ctx, r.Header, rc.bucket); err != nil {
			return err
		}
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
	oacl, hasACL, err := g.requestACL(ctx, r.Header, dst.bucket)
	if err != nil {
		return err
	}
	lastMod := time.Now()
	self := src.bucket == dst.bucket && src.key == dst.key && g.isCurrent(ctx, src, sin)
	if self && !replace && !replaceTags {
		return errCode("InvalidRequest", "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
	}
	_, vst, err := g.bucketVersioning(ctx, dst.bucket)
	if err != nil {
		return err
	}
	// In a versioned bucket a copy onto itself is a new version (the old
	// one kept as it was), as in S3: it is copied below like any other.
	if self && (vst == metaapi.Unversioned || src.dir) {
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
		if hasACL {
			if err := g.storeACL(ctx, sin.ID, oacl, true); err != nil {
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
	var spec *checksumSpec
	if om.ChecksumAlgo != "" {
		spec = &checksumSpec{algo: om.ChecksumAlgo}
	}
	st, err := g.stageClone(ctx, rc, sin, som)
	if err != nil {
		return err
	}
	if st == nil {
		f, err := g.fs.OpenInode(ctx, sin, nil)
		if err != nil {
			return err
		}
		if st, err = g.stage(ctx, rc, &fileReader{ctx: ctx, f: f, end: int64(sin.Length)}, int64(sin.Length), maxPutSize, spec, ""); err != nil {
			return err
		}
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
	if err := g.storeMeta(stagingCtx(ctx), st.in.ID, om); err != nil {
		return err
	}
	if len(tags) > 0 {
		if err := g.storeTags(ctx, st.in.ID, tags); err != nil {
			return err
		}
	}
	if hasACL {
		if err := g.storeACL(stagingCtx(ctx), st.in.ID, oacl, true); err != nil {
			return err
		}
	}
	if err := g.publish(ctx, w.Header(), g.stagingIno, st.name, dst, rc.creds(), cond, false); err != nil {
		return err
	}
	published = true
	res := copyObjectResult{NS: s3NS, ETag: quoteETag(st.md5), LastModified: s3Time(time.Unix(0, st.in.Mtime))}
	return writeXML(w, res)
}

// stageClone stages a copy of the source that shares its chunks (metad's
// Clone: no byte read or written, whatever the size), when the source's ETag
// and checksum are known to describe its bytes now: they are the copy's.
// It returns nil when the bytes must be copied instead: the ETag is stale (a
// write through the mount since), a writer has the source open, or it reads
// through layout.MaxLayers layers already.
func (g *Gateway) stageClone(ctx context.Context, rc *reqCtx, sin metaapi.Inode, som *objectMeta) (*staged, error) {
	if som == nil || som.Gen != sin.Gen || som.ETag == "" {
		return nil, nil
	}
	name := newStagingName()
	in, err := g.meta.Clone(ctx, sin.ID, g.stagingIno, name, false, fileMode, rc.creds())
	if e := client.Errno(err); e == syscall.EBUSY || e == syscall.EINVAL {
		return nil, nil // a writer has it, or it reads through the most layers a file may
	}
	if err != nil {
		return nil, err
	}
	return &staged{name: name, in: in, md5: som.ETag, sum: som.Checksum, size: int64(in.Length)}, nil
}

// discardHeaders lets a handler that answers on its own (putMarker) be
// reused inside another one that writes the real response.
type discardHeaders struct{ http.ResponseWriter }

func (d discardHeaders) Header() http.Header       { return http.Header{} }
func (d discardHeaders) WriteHeader(int)           {}
func (d discardHeaders) Write([]byte) (int, error) { return 0, nil }
