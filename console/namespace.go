package console

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/rpc"
)

// The console acts on the namespace as root: it is an administrator's tool.
var rootCreds = client.Creds{}

// maxName is the longest name of one directory entry (as in Linux).
const maxName = 255

// cleanPath checks a path from a request: absolute, no empty, "." or ".."
// component, no NUL, names of at most 255 bytes, valid UTF-8. It returns
// the path without a trailing slash.
func cleanPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("no path given")
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q: must start with /", p)
	}
	if len(p) > 4096 {
		return "", errors.New("path is longer than 4096 bytes")
	}
	if !utf8.ValidString(p) {
		return "", errors.New("path is not valid UTF-8")
	}
	if p == "/" {
		return "/", nil
	}
	for _, name := range strings.Split(strings.TrimSuffix(p[1:], "/"), "/") {
		if err := checkName(name); err != nil {
			return "", fmt.Errorf("path %q: %w", p, err)
		}
	}
	return strings.TrimSuffix(p, "/"), nil
}

// checkName checks one path component.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name (two slashes in a row?)")
	case name == "." || name == "..":
		return fmt.Errorf("%q cannot be a name", name)
	case len(name) > maxName:
		return fmt.Errorf("name %.40q... is longer than %d bytes", name, maxName)
	case strings.ContainsRune(name, 0):
		return errors.New("names cannot contain a NUL byte")
	case strings.Contains(name, "/"):
		return fmt.Errorf("name %q: names cannot contain /", name)
	case !utf8.ValidString(name):
		return errors.New("name is not valid UTF-8")
	}
	return nil
}

// nsError answers a namespace error with the status its errno means.
func nsError(w http.ResponseWriter, what string, err error) {
	if e := client.Errno(err); e != 0 {
		status, code := http.StatusBadRequest, "bad_request"
		switch e {
		case syscall.ENOENT:
			status, code = http.StatusNotFound, "not_found"
		case syscall.EEXIST:
			status, code = http.StatusConflict, "exists"
		case syscall.ENOTEMPTY:
			status, code = http.StatusConflict, "not_empty"
		case syscall.ENOTDIR:
			status, code = http.StatusConflict, "not_a_directory"
		case syscall.EISDIR:
			status, code = http.StatusConflict, "is_a_directory"
		case syscall.ECANCELED:
			status, code = http.StatusConflict, "changed"
		case syscall.EACCES, syscall.EPERM:
			status, code = http.StatusForbidden, "permission_denied"
		case syscall.ENOSPC, syscall.EDQUOT:
			status, code = http.StatusInsufficientStorage, "no_space"
		case syscall.EFBIG:
			status, code = http.StatusRequestEntityTooLarge, "too_large"
		case syscall.EROFS:
			apiError(w, http.StatusForbidden, "read_only", what+": it is inside a snapshot, which is read-only (the Snapshots page deletes a snapshot)")
			return
		}
		apiError(w, status, code, fmt.Sprintf("%s: %v", what, e))
		return
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		apiError(w, http.StatusGatewayTimeout, "timeout", what+": timed out")
		return
	}
	switch rpc.CodeOf(err) {
	case rpc.Unavailable, rpc.DeadlineExceeded:
		apiError(w, http.StatusServiceUnavailable, "namespace_unavailable", what+": the metadata service does not answer: "+err.Error())
		return
	}
	apiError(w, http.StatusInternalServerError, "internal", what+": "+err.Error())
}

func (c *Console) meta() *client.Meta { return c.cfg.FS.Meta() }

type nsTotals struct {
	inodes, bytes, gc int64
	gcBytes           uint64
}

// namespaceTotals is StatFS for the sampler.
func (c *Console) namespaceTotals(ctx context.Context) (nsTotals, bool) {
	t, err := c.namespaceTotalsErr(ctx)
	return t, err == nil
}

func (c *Console) namespaceTotalsErr(ctx context.Context) (nsTotals, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	st, err := c.meta().StatFS(ctx)
	if err != nil {
		return nsTotals{}, err
	}
	return nsTotals{inodes: st.Inodes, bytes: st.Bytes, gc: st.GCQueue, gcBytes: st.GCBytes}, nil
}

func typeName(t metaapi.Type) string {
	switch t {
	case metaapi.TypeFile:
		return "file"
	case metaapi.TypeDir:
		return "dir"
	case metaapi.TypeSymlink:
		return "symlink"
	}
	return "unknown"
}

// entryJSON is one row of a listing.
type entryJSON struct {
	Name  string     `json:"name"`
	Type  string     `json:"type"`
	Ino   uint64     `json:"ino"`
	Size  uint64     `json:"size"`
	Mode  string     `json:"mode"`
	Mtime *time.Time `json:"mtime"`
}

func unixTime(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}

func modeString(in metaapi.Inode) string {
	return fmt.Sprintf("%04o", in.Mode&0o7777)
}

type listJSON struct {
	Path    string      `json:"path"`
	Ino     uint64      `json:"ino"`
	Entries []entryJSON `json:"entries"`
	More    bool        `json:"more"`
	Next    string      `json:"next"` // pass as ?after= for the next page
	// With ?sort= or ?q=: the entries that matched, and where this page
	// starts among them.
	Total  *int `json:"total,omitempty"`
	Offset int  `json:"offset,omitempty"`
}

// hiddenUpload marks the staging files of uploads in progress; listings
// leave them out.
const hiddenUpload = ".flyfs-console-upload."

// handleList lists one page of a directory: ?path=&after=&limit= (≤ 1000).
func (c *Console) handleList(w http.ResponseWriter, r *http.Request) {
	p, err := cleanPath(r.URL.Query().Get("path"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", err.Error())
		return
	}
	limit, err := queryInt(r, "limit", 200, 1, 1000)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	after := r.URL.Query().Get("after")
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	dir, err := c.meta().Resolve(ctx, p, true)
	if err != nil {
		nsError(w, "list "+p, err)
		return
	}
	if dir.Type != metaapi.TypeDir {
		apiError(w, http.StatusConflict, "not_a_directory", p+" is not a directory")
		return
	}
	if q := r.URL.Query(); q.Has("sort") || q.Has("q") {
		c.listSorted(ctx, w, r, p, dir.ID, limit)
		return
	}
	ents, more, err := c.meta().ReadDir(ctx, dir.ID, after, limit, true)
	if err != nil {
		nsError(w, "list "+p, err)
		return
	}
	out := listJSON{Path: p, Ino: dir.ID, Entries: []entryJSON{}, More: more}
	for _, e := range ents {
		out.Next = e.Name
		if hiddenEntry(p, e.Name) {
			continue
		}
		out.Entries = append(out.Entries, entryOf(e))
	}
	writeJSON(w, http.StatusOK, out)
}

func entryOf(e metaapi.DirEntry) entryJSON {
	ej := entryJSON{Name: e.Name, Type: typeName(e.Type), Ino: e.Ino}
	if e.Inode != nil {
		ej.Size, ej.Mode, ej.Mtime = e.Inode.Length, modeString(*e.Inode), unixTime(e.Inode.Mtime)
	}
	return ej
}

// hiddenEntry says whether a listing leaves name out: the console's and the
// S3 gateway's uploads in flight.
func hiddenEntry(dir, name string) bool {
	return strings.HasPrefix(name, hiddenUpload) || (dir == "/" && name == client.S3StagingRoot)
}

// maxSorted bounds the directories listSorted reads whole.
const maxSorted = 100_000

// listSorted answers a listing with ?sort= or ?q=: the whole directory read
// (up to maxSorted entries), filtered by q (a case-insensitive part of the
// name), sorted, and paged by ?offset=. total counts what matched.
func (c *Console) listSorted(ctx context.Context, w http.ResponseWriter, r *http.Request, p string, dir uint64, limit int) {
	q := r.URL.Query()
	by, order, find := q.Get("sort"), q.Get("order"), strings.ToLower(q.Get("q"))
	if by == "" {
		by = "natural"
	}
	less, ok := entryOrders[by]
	if !ok || (order != "" && order != "asc" && order != "desc") {
		apiError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("sort %q order %q: sort is name, natural, size or mtime; order asc or desc", by, order))
		return
	}
	offset, err := queryInt(r, "offset", 0, 0, maxSorted)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	var all []entryJSON
	after := ""
	for {
		ents, more, err := c.meta().ReadDir(ctx, dir, after, 1000, true)
		if err != nil {
			nsError(w, "list "+p, err)
			return
		}
		for _, e := range ents {
			after = e.Name
			if hiddenEntry(p, e.Name) || (find != "" && !strings.Contains(strings.ToLower(e.Name), find)) {
				continue
			}
			all = append(all, entryOf(e))
		}
		if len(all) > maxSorted {
			apiError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("%s has more than %d entries to sort: list it in name order (no sort or search)", p, maxSorted))
			return
		}
		if !more {
			break
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if by != "name" && (a.Type == "dir") != (b.Type == "dir") {
			return a.Type == "dir" // either way round
		}
		if order == "desc" {
			return less(b, a)
		}
		return less(a, b)
	})
	out := listJSON{Path: p, Ino: dir, Entries: all[min(offset, len(all)):min(offset+limit, len(all))], Total: &[]int{len(all)}[0], Offset: offset}
	if out.Entries == nil {
		out.Entries = []entryJSON{} // an empty directory lists [], not null
	}
	out.More = offset+len(out.Entries) < len(all)
	writeJSON(w, http.StatusOK, out)
}

// entryOrders are the sorts of listSorted. Every order but raw name order
// lists directories first, as file browsers do (listSorted sees to it).
var entryOrders = map[string]func(a, b entryJSON) bool{
	"name":    func(a, b entryJSON) bool { return a.Name < b.Name },
	"natural": func(a, b entryJSON) bool { return naturalLess(a.Name, b.Name) },
	"size": func(a, b entryJSON) bool {
		if a.Size != b.Size {
			return a.Size < b.Size
		}
		return naturalLess(a.Name, b.Name)
	},
	"mtime": func(a, b entryJSON) bool {
		ta, tb := timeOf(a.Mtime), timeOf(b.Mtime)
		if !ta.Equal(tb) {
			return ta.Before(tb)
		}
		return naturalLess(a.Name, b.Name)
	},
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// naturalLess orders names as people count: runs of digits compare by their
// value (part-2 before part-10), the rest by bytes; equal values with more
// leading zeros sort later, and names equal so far by bytes.
func naturalLess(a, b string) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			da, db := strings.TrimLeft(a[si:i], "0"), strings.TrimLeft(b[sj:j], "0")
			if len(da) != len(db) {
				return len(da) < len(db)
			}
			if da != db {
				return da < db
			}
			if i-si != j-sj {
				return i-si < j-sj // fewer leading zeros first
			}
			continue
		}
		if ca != cb {
			return ca < cb
		}
		i++
		j++
	}
	if len(a)-i != len(b)-j {
		return len(a)-i < len(b)-j
	}
	return a < b
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

type xattrJSON struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Encoding string `json:"encoding"` // text or base64
}

type layoutJSON struct {
	ChunkSize    uint32   `json:"chunkSize"`
	Stripe       uint32   `json:"stripe"`
	Table        uint32   `json:"table"`
	TableVersion uint32   `json:"tableVersion"`
	Chains       []uint32 `json:"chains"` // in stripe order
	Error        string   `json:"error,omitempty"`
}

type statJSON struct {
	Path     string      `json:"path"`
	Name     string      `json:"name"`
	Ino      uint64      `json:"ino"`
	Type     string      `json:"type"`
	Size     uint64      `json:"size"`
	Mode     string      `json:"mode"`
	UID      uint32      `json:"uid"`
	GID      uint32      `json:"gid"`
	Nlink    uint32      `json:"nlink"`
	Atime    *time.Time  `json:"atime"`
	Mtime    *time.Time  `json:"mtime"`
	Ctime    *time.Time  `json:"ctime"`
	Gen      uint64      `json:"gen"`
	ETag     string      `json:"etag"`
	Target   string      `json:"symlinkTarget,omitempty"`
	Implicit bool        `json:"implicit"`
	Xattrs   []xattrJSON `json:"xattrs"`
	// UserMetadata holds the user.* extended attributes (S3 user metadata
	// and POSIX user attributes alike).
	UserMetadata map[string]string `json:"userMetadata"`
	Layout       *layoutJSON       `json:"layout"`
	// Versioning is the state of the bucket the entry is in (or is):
	// "", "Enabled" or "Suspended"; VersionID the file's current id there.
	Versioning string `json:"versioning,omitempty"`
	VersionID  string `json:"versionId,omitempty"`
	// Locked says why the file cannot be removed for good (object lock).
	Locked string `json:"locked,omitempty"`
}

// etagOf is the strong validator the console uses: the inode and its
// generation, which moves on every data change.
func etagOf(in metaapi.Inode) string { return fmt.Sprintf("%x-%x", in.ID, in.Gen) }

// handleStat returns one entry's details: ?path=
func (c *Console) handleStat(w http.ResponseWriter, r *http.Request) {
	p, err := cleanPath(r.URL.Query().Get("path"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	in, err := c.meta().Resolve(ctx, p, false)
	if err != nil {
		nsError(w, "stat "+p, err)
		return
	}
	out := statJSON{Path: p, Name: path.Base(p), Ino: in.ID, Type: typeName(in.Type), Size: in.Length, Mode: modeString(in),
		UID: in.UID, GID: in.GID, Nlink: in.Nlink, Atime: unixTime(in.Atime), Mtime: unixTime(in.Mtime), Ctime: unixTime(in.Ctime),
		Gen: in.Gen, Target: in.Target, Implicit: in.Implicit, Xattrs: []xattrJSON{}, UserMetadata: map[string]string{}}
	if in.Type == metaapi.TypeFile {
		out.ETag = etagOf(in)
	}
	dir := in.ID
	if in.Type != metaapi.TypeDir {
		if parent, _, err := c.parentOf(ctx, p); err == nil {
			dir = parent.ID
		}
	}
	if sc, err := c.meta().VersionScope(ctx, dir); err == nil && sc.Bucket != 0 {
		out.Versioning = versioningName(sc.State)
		if in.Type == metaapi.TypeFile {
			out.VersionID = in.VersionID
			if out.VersionID == "" {
				out.VersionID = metaapi.NullVersion
			}
			out.Locked = lockedWhy(in, time.Now())
		}
	}
	names, err := c.meta().ListXattr(ctx, in.ID)
	if err != nil {
		nsError(w, "list extended attributes of "+p, err)
		return
	}
	for _, n := range names {
		v, err := c.meta().GetXattr(ctx, in.ID, n)
		if client.Errno(err) == syscall.ENODATA {
			continue // removed between list and get
		}
		if err != nil {
			nsError(w, "read extended attribute "+n+" of "+p, err)
			return
		}
		x := xattrJSON{Name: n, Value: string(v), Encoding: "text"}
		if !utf8.Valid(v) {
			x.Value, x.Encoding = base64.StdEncoding.EncodeToString(v), "base64"
		} else if strings.HasPrefix(n, "user.") && !strings.HasPrefix(n, "user.s3.") {
			// user.s3.* are the S3 gateway's records (an object's metadata
			// and ETag, a bucket's settings), shown as such, not as the
			// user's own attributes.
			out.UserMetadata[strings.TrimPrefix(n, "user.")] = string(v)
		}
		out.Xattrs = append(out.Xattrs, x)
	}
	if in.Type == metaapi.TypeFile || in.Type == metaapi.TypeDir {
		l := in.Layout
		if in.Type == metaapi.TypeDir {
			if dl, err := c.meta().GetLayout(ctx, in.ID); err == nil {
				l = dl
			}
		}
		if l.ChunkSize != 0 {
			lj := &layoutJSON{ChunkSize: l.ChunkSize, Stripe: l.Stripe, Table: l.TableID, TableVersion: l.TableVersion, Chains: []uint32{}}
			if in.Type == metaapi.TypeFile {
				if info, err := c.routing(ctx); err != nil {
					lj.Error = "chains unknown: " + err.Error()
				} else if chains, ok := info.Table(l.TableID, l.TableVersion); !ok {
					lj.Error = fmt.Sprintf("chain table %d version %d is not in routing", l.TableID, l.TableVersion)
				} else if ids, err := l.Chains(layout.ChainTable{ID: l.TableID, Version: l.TableVersion, Chains: chains}); err != nil {
					lj.Error = err.Error()
				} else {
					for _, id := range ids {
						lj.Chains = append(lj.Chains, uint32(id))
					}
				}
			}
			out.Layout = lj
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// parentOf resolves the directory that holds p and returns it with p's name.
func (c *Console) parentOf(ctx context.Context, p string) (metaapi.Inode, string, error) {
	dir, name := path.Split(p)
	parent, err := c.meta().Resolve(ctx, path.Clean(dir), true)
	if err != nil {
		return metaapi.Inode{}, "", err
	}
	if parent.Type != metaapi.TypeDir {
		return metaapi.Inode{}, "", syscall.ENOTDIR
	}
	return parent, name, nil
}

type mkdirReq struct {
	Path    string `json:"path"`
	Parents bool   `json:"parents"` // create missing parents too (mkdir -p)
}

func (c *Console) handleMkdir(w http.ResponseWriter, r *http.Request) {
	var req mkdirReq
	if !readJSON(w, r, &req) {
		return
	}
	p, err := cleanPath(req.Path)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", err.Error())
		return
	}
	if p == "/" {
		apiError(w, http.StatusConflict, "exists", "/ exists")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	var in metaapi.Inode
	if req.Parents {
		in, err = c.meta().MkdirAll(ctx, p, 0o755, rootCreds, false)
	} else {
		var parent metaapi.Inode
		var name string
		if parent, name, err = c.parentOf(ctx, p); err == nil {
			in, err = c.meta().Mkdir(ctx, parent.ID, name, 0o755, rootCreds)
		}
	}
	if err != nil {
		nsError(w, "mkdir "+p, err)
		return
	}
	c.auditAction(r, "make directory "+p)
	writeJSON(w, http.StatusOK, map[string]any{"path": p, "ino": in.ID})
}

type renameReq struct {
	From      string `json:"from"`
	To        string `json:"to"`
	NoReplace bool   `json:"noReplace"` // fail if To exists
}

// handleRename moves an entry in one metadata transaction: a directory moves
// with everything in it, atomically.
func (c *Console) handleRename(w http.ResponseWriter, r *http.Request) {
	var req renameReq
	if !readJSON(w, r, &req) {
		return
	}
	from, err := cleanPath(req.From)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", "from: "+err.Error())
		return
	}
	to, err := cleanPath(req.To)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", "to: "+err.Error())
		return
	}
	if from == "/" || to == "/" {
		apiError(w, http.StatusBadRequest, "bad_path", "the root directory cannot be renamed or replaced")
		return
	}
	if to == from || strings.HasPrefix(to, from+"/") {
		apiError(w, http.StatusBadRequest, "bad_path", fmt.Sprintf("cannot move %s into itself", from))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	sp, sn, err := c.parentOf(ctx, from)
	if err != nil {
		nsError(w, "rename "+from, err)
		return
	}
	dp, dn, err := c.parentOf(ctx, to)
	if err != nil {
		nsError(w, "rename to "+to, err)
		return
	}
	var flags uint32
	if req.NoReplace {
		flags = metaapi.RenameNoReplace
	}
	if err := c.meta().Rename(ctx, metaapi.RenameReq{SrcParent: sp.ID, SrcName: sn, DstParent: dp.ID, DstName: dn, Flags: flags}); err != nil {
		nsError(w, "rename "+from+" to "+to, err)
		return
	}
	c.auditAction(r, fmt.Sprintf("rename %s to %s", from, to))
	writeJSON(w, http.StatusOK, map[string]string{"from": from, "to": to})
}

type deleteReq struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"` // a directory with everything in it
}

func (c *Console) handleDelete(w http.ResponseWriter, r *http.Request) {
	var req deleteReq
	if !readJSON(w, r, &req) {
		return
	}
	p, err := cleanPath(req.Path)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", err.Error())
		return
	}
	if p == "/" {
		apiError(w, http.StatusBadRequest, "bad_path", "the root directory cannot be deleted")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	parent, name, err := c.parentOf(ctx, p)
	if err != nil {
		nsError(w, "delete "+p, err)
		return
	}
	in, err := c.meta().Lookup(ctx, parent.ID, name)
	if err != nil {
		nsError(w, "delete "+p, err)
		return
	}
	switch {
	case in.Type == metaapi.TypeDir && req.Recursive:
		// One call where it can; the files' chunks are reclaimed by metad's
		// GC queue.
		err = c.removeTree(ctx, parent.ID, name)
	case in.Type == metaapi.TypeDir:
		err = c.meta().Rmdir(ctx, parent.ID, name)
	default:
		err = c.meta().Unlink(ctx, metaapi.RemoveReq{Parent: parent.ID, Name: name})
	}
	if err != nil {
		nsError(w, "delete "+p, err)
		return
	}
	c.log.Info("console: deleted", "path", p, "recursive", req.Recursive, "by", sessionOf(r).who.AccessKey)
	what := "delete " + p
	if req.Recursive {
		what += " and everything in it"
	}
	c.auditAction(r, what)
	writeJSON(w, http.StatusOK, map[string]string{"deleted": p})
}

// handleDownload streams a file (with Range support) as an attachment, never
// as a page of this origin.
func (c *Console) handleDownload(w http.ResponseWriter, r *http.Request) {
	p, err := cleanPath(r.URL.Query().Get("path"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", err.Error())
		return
	}
	ctx := r.Context()
	in, f, ok := c.openForReading(ctx, w, r, p, "download")
	if !ok {
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(path.Base(p)))
	h.Set("ETag", `"`+etagOf(in)+`"`)
	http.ServeContent(w, r, "", time.Unix(0, in.Mtime), io.NewSectionReader(readerCtx{f, ctx}, 0, int64(f.Size())))
}

// openForReading opens the file at p, or its version ?version=, for a
// download or a preview; it answers the request itself (ok false) when
// that fails.
func (c *Console) openForReading(ctx context.Context, w http.ResponseWriter, r *http.Request, p, what string) (metaapi.Inode, *client.File, bool) {
	var in metaapi.Inode
	var err error
	if v := r.URL.Query().Get("version"); v != "" {
		in, err = c.versionInode(ctx, p, v)
	} else {
		in, err = c.meta().Resolve(ctx, p, true)
	}
	if err != nil {
		nsError(w, what+" "+p, err)
		return in, nil, false
	}
	if in.Type != metaapi.TypeFile {
		apiError(w, http.StatusConflict, "is_a_directory", p+" is not a file")
		return in, nil, false
	}
	f, err := c.cfg.FS.OpenInode(ctx, in, nil)
	if err != nil {
		nsError(w, what+" "+p, err)
		return in, nil, false
	}
	return in, f, true
}

// readerCtx reads a file under the request's context, so a client that
// goes away stops the reads.
type readerCtx struct {
	f   *client.File
	ctx context.Context
}

func (r readerCtx) ReadAt(p []byte, off int64) (int, error) { return r.f.ReadAtContext(r.ctx, p, off) }

// countJSON is what a tree holds, for a delete's confirmation.
type countJSON struct {
	Files    int64 `json:"files"` // everything not a directory
	Dirs     int64 `json:"dirs"`  // below the path
	Bytes    int64 `json:"bytes"`
	Complete bool  `json:"complete"` // false: the walk stopped at maxCount entries or its time
}

// maxCount bounds a count's walk.
const maxCount = 100_000

// countTree counts what lies below dir, breadth first: directories, other
// entries, and the bytes of files. It stops at limit entries or when ctx
// ends, answering what it counted with Complete false.
func (c *Console) countTree(ctx context.Context, dir uint64, limit int) (countJSON, error) {
	out := countJSON{Complete: true}
	queue := []uint64{dir}
	for len(queue) > 0 && out.Complete {
		dir := queue[0]
		queue = queue[1:]
		after := ""
		for {
			ents, more, err := c.meta().ReadDir(ctx, dir, after, 1000, true)
			if err != nil {
				if ctx.Err() != nil {
					out.Complete = false
					break
				}
				return out, err
			}
			for _, e := range ents {
				after = e.Name
				switch {
				case e.Type == metaapi.TypeDir:
					out.Dirs++
					queue = append(queue, e.Ino)
				default:
					out.Files++
					if e.Type == metaapi.TypeFile && e.Inode != nil {
						out.Bytes += int64(e.Inode.Length)
					}
				}
			}
			if out.Files+out.Dirs >= int64(limit) {
				out.Complete = false
			}
			if !more || len(ents) == 0 || !out.Complete {
				break
			}
		}
	}
	return out, nil
}

// handleCount counts the entries and bytes below a directory (up to
// maxCount entries, within 10 s), so a delete can say how much goes.
func (c *Console) handleCount(w http.ResponseWriter, r *http.Request) {
	p, err := cleanPath(r.URL.Query().Get("path"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	root, err := c.meta().Resolve(ctx, p, true)
	if err != nil {
		nsError(w, "count "+p, err)
		return
	}
	if root.Type != metaapi.TypeDir {
		writeJSON(w, http.StatusOK, countJSON{Files: 1, Bytes: int64(root.Length), Complete: true})
		return
	}
	out, err := c.countTree(ctx, root.ID, maxCount)
	if err != nil {
		nsError(w, "count "+p, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
