package gateway

import (
	"context"
	"net/http"
	"strings"
	"syscall"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/api/metaapi"
)

// deleteOutcome is what a delete did in a versioned bucket: the version it
// removed or the delete marker it made (VersionID), and whether that was a
// delete marker.
type deleteOutcome struct {
	VersionID    string
	DeleteMarker bool
}

// deleteVersioned is a delete in a bucket that has or had versioning (or
// of a named version): without a version id, a delete marker (the current
// version kept); with one, that version for good. A missing version is
// success, as a missing key is. Directory keys ("a/") have no versions.
func (g *Gateway) deleteVersioned(ctx context.Context, b metaapi.Inode, o objectPath, version string, hasVersion bool, ifMatch string, bypass bool) (deleteOutcome, error) {
	if hasVersion {
		if err := checkVersionIDSyntax(version); err != nil {
			return deleteOutcome{}, err
		}
		res, err := g.meta.DeleteVersion(ctx, metaapi.DeleteVersionReq{Bucket: b.ID, Key: o.key, ID: version, PruneImplicit: true, BypassGovernance: bypass})
		switch errnoOf(err) {
		case 0:
			return deleteOutcome{VersionID: version, DeleteMarker: res.DeleteMarker}, nil
		case syscall.ENOENT:
			return deleteOutcome{VersionID: version}, nil
		case syscall.EPERM:
			return deleteOutcome{}, lockedError(err)
		}
		return deleteOutcome{}, nsError(err, keyDelete, o.key)
	}
	req := metaapi.DeleteKeyReq{Bucket: b.ID, Key: o.key, PruneImplicit: true}
	if ifMatch != "" {
		parent, err := g.meta.Resolve(ctx, o.parentPath(), true)
		if err != nil {
			return deleteOutcome{}, nsError(err, keyDelete, o.key)
		}
		cur, err := g.meta.Lookup(ctx, parent.ID, o.name())
		if err != nil {
			return deleteOutcome{}, nsError(err, keyDelete, o.key)
		}
		if cur.Type != metaapi.TypeFile {
			return deleteOutcome{}, errCode("NoSuchKey", "")
		}
		om, err := g.loadMeta(ctx, cur.ID)
		if err != nil {
			return deleteOutcome{}, err
		}
		if !etagMatches(ifMatch, etagFor(cur, om)) {
			return deleteOutcome{}, errCode("PreconditionFailed", "")
		}
		req.IfIno, req.IfGen = cur.ID, cur.Gen
	}
	id, err := g.meta.DeleteKey(ctx, req)
	switch errnoOf(err) {
	case 0:
		return deleteOutcome{VersionID: id, DeleteMarker: true}, nil
	case syscall.ENOTDIR:
		// A file on the key's path ("a" for "a/b"): no such key, and no
		// marker can be put under it.
		return deleteOutcome{}, nil
	}
	return deleteOutcome{}, nsError(err, keyDelete, o.key)
}

// deleteKey removes one key (or one version of it) and says what it did.
// bypass is x-amz-bypass-governance-retention (the caller may write the
// bucket: the operation's permission).
func (g *Gateway) deleteKey(ctx context.Context, bucket, key, version string, hasVersion bool, ifMatch string, bypass bool) (deleteOutcome, error) {
	o, err := parseKey(bucket, key)
	if err != nil {
		return deleteOutcome{}, err
	}
	b, st, err := g.bucketVersioning(ctx, bucket)
	if err != nil {
		return deleteOutcome{}, err
	}
	if !o.dir && (st != metaapi.Unversioned || (hasVersion && version != nullVersion)) {
		return g.deleteVersioned(ctx, b, o, version, hasVersion, ifMatch, bypass)
	}
	if hasVersion {
		if err := checkVersionIDSyntax(version); err != nil {
			return deleteOutcome{}, err
		}
		if o.dir && version != nullVersion {
			return deleteOutcome{VersionID: version}, nil // names no version
		}
	}
	return deleteOutcome{}, g.deleteOne(ctx, bucket, key, ifMatch)
}

// deleteOne removes one key of a bucket never versioned; a missing key is
// success, as in S3.
func (g *Gateway) deleteOne(ctx context.Context, bucket, key, ifMatch string) error {
	o, err := parseKey(bucket, key)
	if err != nil {
		return err
	}
	parent, err := g.meta.Resolve(ctx, o.parentPath(), true)
	if err != nil {
		err = nsError(err, keyDelete, o.key)
		if ifMatch == "" && toAPIError(err).Code == "NoSuchKey" {
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
	}
	return err
}

// deleteMarker removes the explicit directory of a "dir/" key when it is
// empty; when it still holds objects only the marker goes: the directory
// becomes implicit and disappears with its last object.
func (g *Gateway) deleteMarker(ctx context.Context, o objectPath, parent metaapi.Inode, ifMatch string) error {
	cur, err := g.meta.Lookup(ctx, parent.ID, o.name())
	if err != nil && errnoOf(err) != syscall.ENOENT {
		return err // not known to be absent
	}
	if err != nil || cur.Type != metaapi.TypeDir || cur.Implicit {
		if ifMatch != "" {
			return errCode("NoSuchKey", "")
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
			// Its last keys may have gone since the Rmdir (a DeleteObjects
			// deletes them alongside), while it was still explicit, so none
			// pruned it: left empty, it goes now, as their deletes would
			// have taken it.
			g.prune(ctx, o, len(o.segs))
		}
		return err
	}
	return err
}

// pruneUp removes the now-empty implicit ancestors of o (below the bucket).
// Rmdir only removes an empty directory, so a concurrent PUT into one of
// them simply stops the pruning.
func (g *Gateway) pruneUp(ctx context.Context, o objectPath) { g.prune(ctx, o, len(o.segs)-1) }

// prune removes the empty implicit directories of o's first n segments,
// the deepest first, up to the first that is not one.
func (g *Gateway) prune(ctx context.Context, o objectPath, n int) {
	for i := n; i >= 1; i-- {
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
	out, err := g.deleteKey(ctx, rc.bucket, rc.object, rc.versionID, rc.hasVersion, r.Header.Get("If-Match"), bypassGovernance(r.Header))
	if err != nil {
		return err
	}
	if out.VersionID != "" {
		w.Header().Set("X-Amz-Version-Id", out.VersionID)
	}
	if out.DeleteMarker {
		w.Header().Set("X-Amz-Delete-Marker", "true")
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
	outs := make([]deleteOutcome, len(req.Objects))
	sem := make(chan struct{}, 16)
	done := make(chan struct{})
	for i, obj := range req.Objects {
		sem <- struct{}{}
		go func(i int, obj deleteObjectID) {
			defer func() { <-sem; done <- struct{}{} }()
			if errs[i] = g.decide(r, rc, "DeleteObject", rc.bucket, obj.Key, access.ReadWrite); errs[i] != nil {
				return
			}
			outs[i], errs[i] = g.deleteKey(ctx, rc.bucket, obj.Key, obj.VersionID, obj.VersionID != "", obj.ETag, bypassGovernance(r.Header))
		}(i, obj)
	}
	for range req.Objects {
		<-done
	}
	res := deleteResult{NS: s3NS}
	for i, obj := range req.Objects {
		if errs[i] != nil {
			ae := toAPIError(errs[i])
			res.Errors = append(res.Errors, deleteError{Key: obj.Key, VersionID: obj.VersionID, Code: ae.Code, Message: ae.Message})
		} else if !req.Quiet {
			d := deletedObject{Key: obj.Key, VersionID: obj.VersionID}
			if outs[i].DeleteMarker {
				d.DeleteMarker = true
				if obj.VersionID == "" {
					d.DeleteMarkerVersionID = outs[i].VersionID
				}
			}
			res.Deleted = append(res.Deleted, d)
		}
	}
	return writeXML(w, res)
}
