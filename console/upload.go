package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
)

// Uploads come in parts so a browser can send files of any size with a
// progress bar and retry a failed part. The data goes into a hidden staging
// file next to the destination, part by part as it arrives (a part is
// streamed through a small buffer, never held whole); completing the upload
// renames the staging file over the destination in one metadata
// transaction, so readers see the old file or the new one, never half.

// uploadIdle: an upload with no part for this long is abandoned; its staging
// file is removed.
const uploadIdle = 30 * time.Minute

// partBuf is how much of a part is held in memory at once.
const partBuf = 1 << 20

type upload struct {
	id     string
	owner  string // access key that started it
	dir    uint64 // parent directory inode
	path   string // destination
	name   string // destination name
	stage  string // staging file name in dir
	size   uint64 // declared total size
	file   *client.File
	mu     sync.Mutex        // one part at a time per upload
	parts  map[uint64]uint64 // offset → length received
	active time.Time
	closed bool
}

type uploads struct {
	mu   sync.Mutex
	byID map[string]*upload
}

func newUploads() *uploads { return &uploads{byID: map[string]*upload{}} }

func (u *uploads) get(id, owner string) *upload {
	u.mu.Lock()
	defer u.mu.Unlock()
	up := u.byID[id]
	if up == nil || up.owner != owner {
		return nil
	}
	return up
}

func (u *uploads) remove(id string) {
	u.mu.Lock()
	delete(u.byID, id)
	u.mu.Unlock()
}

// reap abandons uploads idle for too long.
func (u *uploads) reap(ctx context.Context, c *Console, now time.Time) {
	u.mu.Lock()
	var old []*upload
	for id, up := range u.byID {
		up.mu.Lock()
		idle := now.Sub(up.active) > uploadIdle
		up.mu.Unlock()
		if idle {
			old = append(old, up)
			delete(u.byID, id)
		}
	}
	u.mu.Unlock()
	for _, up := range old {
		c.log.Info("console: abandoned upload removed", "path", up.path, "id", up.id)
		c.discard(ctx, up)
	}
}

// discard closes an upload's staging file and removes it.
func (c *Console) discard(ctx context.Context, up *upload) {
	up.mu.Lock()
	defer up.mu.Unlock()
	if !up.closed {
		up.closed = true
		up.file.Close()
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.meta().Unlink(ctx, metaapi.RemoveReq{Parent: up.dir, Name: up.stage}); err != nil && client.Errno(err) != syscall.ENOENT {
		c.log.Warn("console: remove upload staging file", "path", up.path, "err", err)
	}
}

type uploadStartReq struct {
	Path string `json:"path"`
	Size uint64 `json:"size"`
}

type uploadJSON struct {
	ID       string `json:"id"`
	Path     string `json:"path"`
	Size     uint64 `json:"size"`
	PartSize int64  `json:"maxPartBytes"`
	Received uint64 `json:"received"`
}

func (c *Console) handleUploadStart(w http.ResponseWriter, r *http.Request) {
	var req uploadStartReq
	if !readJSON(w, r, &req) {
		return
	}
	p, err := cleanPath(req.Path)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", err.Error())
		return
	}
	if p == "/" {
		apiError(w, http.StatusBadRequest, "bad_path", "give the path of the file to create")
		return
	}
	if req.Size > metaapi.MaxFileSize {
		apiError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("%d bytes is more than the largest file (%d bytes)", req.Size, uint64(metaapi.MaxFileSize)))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	parent, name, err := c.parentOf(ctx, p)
	if err != nil {
		nsError(w, "upload "+p, err)
		return
	}
	if in, err := c.meta().Lookup(ctx, parent.ID, name); err == nil && in.Type == metaapi.TypeDir {
		apiError(w, http.StatusConflict, "is_a_directory", p+" is a directory")
		return
	}
	id := randomToken()[:22]
	stage := hiddenUpload + id
	in, session, _, err := c.meta().Create(ctx, parent.ID, stage, 0o644, os.O_EXCL|os.O_WRONLY, rootCreds)
	if err != nil {
		nsError(w, "upload "+p, err)
		return
	}
	f, err := c.cfg.FS.OpenInode(ctx, in, session)
	if err != nil {
		c.meta().Unlink(ctx, metaapi.RemoveReq{Parent: parent.ID, Name: stage})
		nsError(w, "upload "+p, err)
		return
	}
	up := &upload{id: id, owner: sessionOf(r).who.AccessKey, dir: parent.ID, path: p, name: name, stage: stage,
		size: req.Size, file: f, parts: map[uint64]uint64{}, active: c.cfg.Now()}
	c.uploads.mu.Lock()
	c.uploads.byID[id] = up
	c.uploads.mu.Unlock()
	writeJSON(w, http.StatusOK, uploadJSON{ID: id, Path: p, Size: req.Size, PartSize: c.cfg.MaxPartBytes})
}

// handleUploadPart writes one part: PUT /api/fs/uploads/{id}?offset=N with the
// bytes as the body. A part may be sent again (a retry) and overwrites the
// same range.
func (c *Console) handleUploadPart(w http.ResponseWriter, r *http.Request) {
	up := c.uploads.get(r.PathValue("id"), sessionOf(r).who.AccessKey)
	if up == nil {
		apiError(w, http.StatusNotFound, "not_found", "no such upload (it may have been completed, aborted or abandoned)")
		return
	}
	off, err := strconv.ParseUint(r.URL.Query().Get("offset"), 10, 64)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_request", "offset: want the part's byte offset")
		return
	}
	if off > up.size {
		apiError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("offset %d is past the declared size %d", off, up.size))
		return
	}
	limit := min(uint64(c.cfg.MaxPartBytes), up.size-off)
	if r.ContentLength > int64(limit) {
		// Refused before a byte is written. (A body of unknown length that
		// turns out too long is cut off with part of it written: the
		// caller must send that range again.)
		apiError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("a part at offset %d may hold at most %d bytes (the part size limit or the declared size)", off, limit))
		return
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.closed {
		apiError(w, http.StatusNotFound, "not_found", "the upload is finished")
		return
	}
	up.active = c.cfg.Now()
	body := http.MaxBytesReader(w, r.Body, int64(limit))
	buf := make([]byte, partBuf)
	var n uint64
	for {
		k, rerr := io.ReadFull(body, buf)
		if k > 0 {
			if _, err := up.file.WriteAtContext(r.Context(), buf[:k], int64(off+n)); err != nil {
				nsError(w, "upload "+up.path, err)
				return
			}
			n += uint64(k)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		var tooBig *http.MaxBytesError
		if errors.As(rerr, &tooBig) {
			apiError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("a part at offset %d may hold at most %d bytes (the part size limit or the declared size)", off, limit))
			return
		}
		if rerr != nil {
			apiError(w, http.StatusBadRequest, "bad_request", "reading the part: "+rerr.Error())
			return
		}
	}
	up.parts[off] = max(up.parts[off], n)
	up.active = c.cfg.Now()
	writeJSON(w, http.StatusOK, map[string]uint64{"offset": off, "bytes": n, "received": covered(up.parts)})
}

// covered counts the bytes from 0 that the parts cover without a gap.
func covered(parts map[uint64]uint64) uint64 {
	offs := make([]uint64, 0, len(parts))
	for o := range parts {
		offs = append(offs, o)
	}
	slices.Sort(offs)
	var end uint64
	for _, o := range offs {
		if o > end {
			break
		}
		end = max(end, o+parts[o])
	}
	return end
}

// handleUploadComplete checks that the parts cover the declared size, closes
// the staging file and renames it over the destination.
func (c *Console) handleUploadComplete(w http.ResponseWriter, r *http.Request) {
	up := c.uploads.get(r.PathValue("id"), sessionOf(r).who.AccessKey)
	if up == nil {
		apiError(w, http.StatusNotFound, "not_found", "no such upload (it may have been completed, aborted or abandoned)")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	up.mu.Lock()
	if got := covered(up.parts); got < up.size {
		up.mu.Unlock()
		apiError(w, http.StatusConflict, "incomplete", fmt.Sprintf("the parts cover %d of %d bytes", got, up.size))
		return
	}
	if !up.closed {
		up.closed = true
		if err := up.file.CloseContext(ctx); err != nil {
			up.mu.Unlock()
			c.uploads.remove(up.id)
			c.discard(context.Background(), up)
			nsError(w, "upload "+up.path, err)
			return
		}
	}
	up.mu.Unlock()
	err := c.meta().Rename(ctx, metaapi.RenameReq{SrcParent: up.dir, SrcName: up.stage, DstParent: up.dir, DstName: up.name})
	if err != nil {
		// Keep the upload: the caller may free the name and complete again,
		// or abort.
		nsError(w, "upload "+up.path, err)
		return
	}
	c.uploads.remove(up.id)
	in, err := c.meta().Lookup(ctx, up.dir, up.name)
	if err != nil {
		nsError(w, "upload "+up.path, err)
		return
	}
	c.auditAction(r, fmt.Sprintf("upload %s (%d bytes)", up.path, in.Length))
	writeJSON(w, http.StatusOK, map[string]any{"path": up.path, "ino": in.ID, "size": in.Length, "etag": etagOf(in)})
}

func (c *Console) handleUploadAbort(w http.ResponseWriter, r *http.Request) {
	up := c.uploads.get(r.PathValue("id"), sessionOf(r).who.AccessKey)
	if up == nil {
		apiError(w, http.StatusNotFound, "not_found", "no such upload")
		return
	}
	c.uploads.remove(up.id)
	c.discard(r.Context(), up)
	writeJSON(w, http.StatusOK, map[string]string{"aborted": up.id})
}
