package console

import (
	"context"
	"net/http"
	"path"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// The trash page: what removals kept (metad --trash-days) and restores.

type trashEntryJSON struct {
	Ino     uint64     `json:"ino"`
	Path    string     `json:"path"`
	Type    string     `json:"type"`
	Size    uint64     `json:"size"`
	Removed *time.Time `json:"removed"`
}

type trashJSON struct {
	Days    int              `json:"days"`
	Entries []trashEntryJSON `json:"entries"`
}

func (c *Console) handleTrash(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	es, days, err := c.meta().TrashList(ctx)
	if err != nil {
		nsError(w, "list the trash", err)
		return
	}
	out := trashJSON{Days: days, Entries: []trashEntryJSON{}}
	for _, e := range es {
		out.Entries = append(out.Entries, trashEntryJSON{Ino: e.Ino, Path: e.Path, Type: typeName(e.Type), Size: e.Length, Removed: unixTime(e.At)})
	}
	writeJSON(w, http.StatusOK, out)
}

func (c *Console) handleTrashEmpty(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	es, _, err := c.meta().TrashList(ctx)
	if err != nil {
		nsError(w, "list the trash", err)
		return
	}
	if _, err := c.meta().TrashEmpty(ctx); err != nil {
		nsError(w, "empty the trash", err)
		return
	}
	c.auditAction(r, "empty the trash")
	writeJSON(w, http.StatusOK, map[string]int{"entries": len(es)})
}

type trashRestoreReq struct {
	Ino uint64 `json:"ino"`
	To  string `json:"to"` // a directory; "": where it was
}

func (c *Console) handleTrashRestore(w http.ResponseWriter, r *http.Request) {
	var req trashRestoreReq
	if !readJSON(w, r, &req) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	es, _, err := c.meta().TrashList(ctx)
	if err != nil {
		nsError(w, "list the trash", err)
		return
	}
	var entry *metaapi.TrashEntry
	for i := range es {
		if es[i].Ino == req.Ino {
			entry = &es[i]
		}
	}
	if entry == nil {
		apiError(w, http.StatusNotFound, "not_found", "no such entry in the trash")
		return
	}
	var toIno uint64
	name := ""
	if req.To != "" {
		p, err := cleanPath(req.To)
		if err != nil {
			apiError(w, http.StatusBadRequest, "bad_path", err.Error())
			return
		}
		in, err := c.meta().Resolve(ctx, p, true)
		if err != nil {
			nsError(w, "restore into "+p, err)
			return
		}
		toIno, name = in.ID, path.Base(entry.Path)
	}
	where, err := c.meta().TrashRestore(ctx, req.Ino, toIno, name)
	if err != nil {
		nsError(w, "restore "+entry.Path, err)
		return
	}
	if req.To != "" {
		where = req.To + "/" + where
	}
	c.auditAction(r, "restore "+entry.Path+" from the trash to "+where)
	writeJSON(w, http.StatusOK, map[string]string{"restored": where})
}
