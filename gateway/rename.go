package gateway

import (
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

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
	if err := g.publish(ctx, w.Header(), sparent.ID, src.name(), dst, rc.creds(), cond, true); err != nil {
		if errnoOf(err) == syscall.EPERM {
			return lockedError(err) // a version under object lock stays on its key
		}
		return nsError(err, keyRename, dst.key)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}
