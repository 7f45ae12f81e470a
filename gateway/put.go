package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"syscall"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

const maxPutSize = 5 << 30 // S3's single-PUT limit

// putObject is PutObject: the body goes into a staging file that one rename
// publishes, so readers see the old object or the new one.
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
	if cond.lock, err = g.newObjectLock(ctx, r.Header, rc.bucket); err != nil {
		return err
	}
	oacl, hasACL, err := g.requestACL(ctx, r.Header, rc.bucket)
	if err != nil {
		return err
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
		if err := g.meta.SetXattr(stagingCtx(ctx), st.in.ID, xattrTagging, v, 0); err != nil {
			return err
		}
	}
	if err := g.storeMeta(stagingCtx(ctx), st.in.ID, om); err != nil {
		return err
	}
	if hasACL {
		if err := g.storeACL(stagingCtx(ctx), st.in.ID, oacl, true); err != nil {
			return err
		}
	}
	if err := g.publish(ctx, w.Header(), g.stagingIno, st.name, o, rc.creds(), cond, false); err != nil {
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

// bodyEmpty says whether the request has no body (reading one byte when
// its length is not announced).
func bodyEmpty(rc *reqCtx) bool {
	if rc.size >= 0 {
		return rc.size == 0
	}
	var one [1]byte
	n, _ := readFull(rc.body, one[:])
	return n == 0
}

// putMarker makes "dir/": an explicit directory. Its body must be empty.
func (g *Gateway) putMarker(w http.ResponseWriter, r *http.Request, rc *reqCtx, o objectPath, om *objectMeta, cond writeCond) error {
	ctx := r.Context()
	if !bodyEmpty(rc) {
		return errCode("InvalidArgument", "The key %q ends in '/', which makes it a directory; a directory object must have an empty body.", o.key)
	}
	oacl, hasACL, err := g.requestACL(ctx, r.Header, o.bucket)
	if err != nil {
		return err
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
	if hasACL {
		if err := g.storeACL(ctx, in.ID, oacl, true); err != nil {
			return err
		}
	}
	w.Header().Set("ETag", quoteETag(emptyMD5))
	w.WriteHeader(http.StatusOK)
	return nil
}
