package console

import (
	"context"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

var errNotAFile = metaapi.ErrnoError(syscall.ENOENT, "that version is a delete marker")

// Versions in the console: a bucket's versioning state (set on a
// directory of the root), a file's versions in a versioned bucket, a
// download of one, and a restore (a copy of an old version made the
// current one, the version it replaces kept, as S3 restores by copy).

// versionJSON is one version of a file, newest first.
type versionJSON struct {
	ID           string     `json:"id"`
	Size         uint64     `json:"size"`
	Modified     *time.Time `json:"modified"`
	Latest       bool       `json:"latest"`
	Current      bool       `json:"current"` // the file the path holds
	DeleteMarker bool       `json:"deleteMarker"`
	Locked       string     `json:"locked,omitempty"` // why it cannot be removed, if it cannot
}

type versionsJSON struct {
	Versioning string        `json:"versioning"` // "", "Enabled", "Suspended"
	Versions   []versionJSON `json:"versions"`
}

func versioningName(st metaapi.Versioning) string {
	switch st {
	case metaapi.VersioningEnabled:
		return "Enabled"
	case metaapi.VersioningSuspended:
		return "Suspended"
	}
	return ""
}

func lockedWhy(in metaapi.Inode, now time.Time) string {
	switch {
	case in.LegalHold:
		return "legal hold"
	case in.RetainMode == metaapi.RetainCompliance && now.UnixNano() < in.RetainUntil:
		return "compliance retention until " + time.Unix(0, in.RetainUntil).UTC().Format(time.RFC3339)
	case in.RetainMode == metaapi.RetainGovernance && now.UnixNano() < in.RetainUntil:
		return "governance retention until " + time.Unix(0, in.RetainUntil).UTC().Format(time.RFC3339)
	}
	return ""
}

// keyOf finds where path p is as a key of a versioned bucket.
func (c *Console) keyOf(ctx context.Context, p string) (*metaapi.VersionScopeResp, string, error) {
	parent, name, err := c.parentOf(ctx, p)
	if err != nil {
		return nil, "", err
	}
	sc, err := c.meta().VersionScope(ctx, parent.ID)
	if err != nil {
		return nil, "", err
	}
	return sc, sc.DirKey + name, nil
}

// handleVersions lists a file's versions: ?path=
func (c *Console) handleVersions(w http.ResponseWriter, r *http.Request) {
	p, err := cleanPath(r.URL.Query().Get("path"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	sc, key, err := c.keyOf(ctx, p)
	if err != nil {
		nsError(w, "versions of "+p, err)
		return
	}
	out := versionsJSON{Versioning: versioningName(sc.State), Versions: []versionJSON{}}
	if sc.Bucket == 0 {
		writeJSON(w, http.StatusOK, out)
		return
	}
	now := time.Now()
	if in, err := c.meta().Resolve(ctx, p, false); err == nil && in.Type == metaapi.TypeFile {
		id := in.VersionID
		if id == "" {
			id = metaapi.NullVersion
		}
		out.Versions = append(out.Versions, versionJSON{ID: id, Size: in.Length, Modified: unixTime(in.Mtime), Latest: true, Current: true, Locked: lockedWhy(in, now)})
	}
	req := metaapi.ListVersionsReq{Bucket: sc.Bucket, Prefix: key, Limit: metaapi.MaxListVersions}
	for {
		res, err := c.meta().ListVersions(ctx, req)
		if err != nil {
			nsError(w, "versions of "+p, err)
			return
		}
		for _, e := range res.Entries {
			if e.Key != key {
				res.More = false
				break
			}
			v := versionJSON{ID: e.ID, Modified: unixTime(e.Time), DeleteMarker: e.DeleteMarker, Latest: len(out.Versions) == 0}
			if e.Inode != nil {
				v.Size, v.Modified, v.Locked = e.Inode.Length, unixTime(e.Inode.Mtime), lockedWhy(*e.Inode, now)
			}
			out.Versions = append(out.Versions, v)
		}
		if !res.More || len(res.Entries) == 0 {
			break
		}
		last := res.Entries[len(res.Entries)-1]
		req.AfterKey, req.AfterSeq = last.Key, last.Seq
	}
	writeJSON(w, http.StatusOK, out)
}

// versionInode is the file of version id of path p (the current one or a
// noncurrent one).
func (c *Console) versionInode(ctx context.Context, p, id string) (metaapi.Inode, error) {
	if in, err := c.meta().Resolve(ctx, p, false); err == nil && in.Type == metaapi.TypeFile {
		cur := in.VersionID
		if cur == "" {
			cur = metaapi.NullVersion
		}
		if cur == id {
			return in, nil
		}
	}
	sc, key, err := c.keyOf(ctx, p)
	if err != nil {
		return metaapi.Inode{}, err
	}
	e, err := c.meta().GetVersion(ctx, sc.Bucket, key, id)
	if err != nil {
		return metaapi.Inode{}, err
	}
	if e.DeleteMarker || e.Inode == nil {
		return metaapi.Inode{}, errNotAFile
	}
	return *e.Inode, nil
}

type restoreReq struct {
	Path string `json:"path"`
	ID   string `json:"id"`
}

// handleRestoreVersion makes a copy of an old version the current one.
func (c *Console) handleRestoreVersion(w http.ResponseWriter, r *http.Request) {
	var req restoreReq
	if !readJSON(w, r, &req) {
		return
	}
	p, err := cleanPath(req.Path)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Minute)
	defer cancel()
	old, err := c.versionInode(ctx, p, req.ID)
	if err != nil {
		nsError(w, "restore "+req.ID+" of "+p, err)
		return
	}
	src, err := c.cfg.FS.OpenInode(ctx, old, nil)
	if err != nil {
		nsError(w, "restore "+p, err)
		return
	}
	defer src.Close()
	stage := path.Join(path.Dir(p), hiddenUpload+"restore."+req.ID)
	dst, err := c.cfg.FS.OpenFile(ctx, stage, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, old.Mode&0o7777)
	if err != nil {
		nsError(w, "restore "+p, err)
		return
	}
	_, err = io.Copy(io.NewOffsetWriter(dst, 0), io.NewSectionReader(readerCtx{src, ctx}, 0, int64(src.Size())))
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = c.cfg.FS.Rename(ctx, stage, p)
	}
	if err != nil {
		_ = c.cfg.FS.Remove(ctx, stage)
		nsError(w, "restore "+p, err)
		return
	}
	c.auditAction(r, "restore version "+req.ID+" of "+p)
	writeJSON(w, http.StatusOK, map[string]string{"restored": p})
}

type versioningReq struct {
	Path       string `json:"path"`
	Versioning string `json:"versioning"` // Enabled or Suspended
}

// handleSetVersioning sets a bucket's versioning (a directory of the root).
func (c *Console) handleSetVersioning(w http.ResponseWriter, r *http.Request) {
	var req versioningReq
	if !readJSON(w, r, &req) {
		return
	}
	p, err := cleanPath(req.Path)
	if err != nil || strings.Count(p, "/") != 1 || p == "/" {
		apiError(w, http.StatusBadRequest, "bad_path", "versioning is set on a bucket: a directory of the root")
		return
	}
	var st metaapi.Versioning
	switch req.Versioning {
	case "Enabled":
		st = metaapi.VersioningEnabled
	case "Suspended":
		st = metaapi.VersioningSuspended
	default:
		apiError(w, http.StatusBadRequest, "bad_versioning", "versioning is Enabled or Suspended (a bucket never returns to unversioned)")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	in, err := c.meta().Resolve(ctx, p, false)
	if err != nil {
		nsError(w, "versioning of "+p, err)
		return
	}
	if st == metaapi.VersioningSuspended {
		if _, err := c.meta().GetXattr(ctx, in.ID, "user.s3.object-lock"); err == nil {
			apiError(w, http.StatusConflict, "object_lock", "the bucket has object lock: its versioning cannot be suspended")
			return
		}
	}
	if err := c.meta().SetVersioning(ctx, in.ID, st); err != nil {
		nsError(w, "versioning of "+p, err)
		return
	}
	c.auditAction(r, "set versioning of "+p+" to "+req.Versioning)
	writeJSON(w, http.StatusOK, map[string]string{"versioning": req.Versioning})
}
