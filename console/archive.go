package console

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// maxArchiveNames bounds the entries one archive request names; a
// directory among them brings everything below it.
const maxArchiveNames = 1000

// handleArchive downloads several entries of one directory as one zip
// archive: GET /api/fs/archive?dir=D&name=A&name=B. Files are stored
// (uncompressed: model files and checkpoints do not compress, and the
// archive streams at the speed of reads); a named directory comes with its
// whole tree, empty directories included. Symbolic links and special files
// are left out, and so are uploads in flight. Every name is checked before
// the first byte is sent (404 naming the missing one); a read that fails
// later cuts the stream, so the archive is truncated, never silently short
// of a file.
func (c *Console) handleArchive(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	dir, err := cleanPath(q.Get("dir"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", err.Error())
		return
	}
	names := q["name"]
	if len(names) == 0 || len(names) > maxArchiveNames {
		apiError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("name: want 1..%d entries of %s, got %d", maxArchiveNames, dir, len(names)))
		return
	}
	ctx := r.Context()
	parent, err := c.meta().Resolve(ctx, dir, true)
	if err != nil {
		nsError(w, "archive "+dir, err)
		return
	}
	if parent.Type != metaapi.TypeDir {
		apiError(w, http.StatusConflict, "not_a_directory", dir+" is not a directory")
		return
	}
	entries := make([]metaapi.Inode, 0, len(names))
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || n == "." || n == ".." || strings.Contains(n, "/") || seen[n] {
			apiError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("name %q: want distinct names of entries of %s", n, dir))
			return
		}
		seen[n] = true
		in, err := c.meta().Lookup(ctx, parent.ID, n)
		if err != nil {
			nsError(w, "archive "+path.Join(dir, n), err)
			return
		}
		entries = append(entries, in)
	}
	zipName := path.Base(dir)
	if len(names) == 1 {
		zipName = names[0]
	}
	if zipName == "/" {
		zipName = "flyfs"
	}
	h := w.Header()
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(zipName+".zip"))
	zw := zip.NewWriter(w)
	for i, in := range entries {
		if err := c.archiveEntry(ctx, zw, names[i], in); err != nil {
			// The status is sent; cutting the connection is how the
			// browser learns the download failed.
			c.log.Warn("console: archive cut short", "dir", dir, "entry", names[i], "err", err)
			panic(http.ErrAbortHandler)
		}
	}
	if err := zw.Close(); err != nil {
		c.log.Warn("console: archive cut short", "dir", dir, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// archiveEntry writes in, named name in the archive, and for a directory
// everything below it.
func (c *Console) archiveEntry(ctx context.Context, zw *zip.Writer, name string, in metaapi.Inode) error {
	mtime := time.Unix(0, in.Mtime)
	switch in.Type {
	case metaapi.TypeFile:
		f, err := c.cfg.FS.OpenInode(ctx, in, nil)
		if err != nil {
			return err
		}
		defer f.Close()
		fh := &zip.FileHeader{Name: name, Method: zip.Store, Modified: mtime}
		fh.SetMode(0o644)
		out, err := zw.CreateHeader(fh)
		if err != nil {
			return err
		}
		n, err := io.Copy(out, io.NewSectionReader(readerCtx{f, ctx}, 0, int64(f.Size())))
		if err == nil && uint64(n) != f.Size() {
			err = fmt.Errorf("%s: read %d of %d bytes", name, n, f.Size())
		}
		return err
	case metaapi.TypeDir:
		fh := &zip.FileHeader{Name: name + "/", Method: zip.Store, Modified: mtime}
		fh.SetMode(fs.ModeDir | 0o755)
		if _, err := zw.CreateHeader(fh); err != nil {
			return err
		}
		after := ""
		for {
			ents, more, err := c.meta().ReadDir(ctx, in.ID, after, 1000, true)
			if err != nil {
				return err
			}
			for _, e := range ents {
				after = e.Name
				if strings.HasPrefix(e.Name, hiddenUpload) || e.Inode == nil {
					continue
				}
				if err := c.archiveEntry(ctx, zw, name+"/"+e.Name, *e.Inode); err != nil {
					return err
				}
			}
			if !more || len(ents) == 0 {
				return nil
			}
		}
	}
	return nil // links and special files have no bytes of their own to give
}
