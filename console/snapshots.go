package console

import (
	"context"
	"net/http"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Snapshots (metad/ns/snapshot.go): the list, making one of a directory,
// deleting one.

type snapshotJSON struct {
	Name     string     `json:"name"`
	Top      uint64     `json:"top"`
	Source   string     `json:"source"`
	Path     string     `json:"path"`
	Created  *time.Time `json:"created"`
	Files    int        `json:"files"`
	Dirs     int        `json:"dirs"`
	Others   int        `json:"others"`
	Bytes    uint64     `json:"bytes"`
	Skipped  []string   `json:"skipped"`
	Batches  int        `json:"batches"`
	Building bool       `json:"building"`
}

func snapshotOut(s metaapi.Snapshot) snapshotJSON {
	out := snapshotJSON{Name: s.Name, Top: s.Top, Source: s.Source, Path: s.Path, Created: unixTime(s.Created), Files: s.Files,
		Dirs: s.Dirs, Others: s.Others, Bytes: s.Bytes, Skipped: s.Skipped, Batches: s.Batches, Building: s.Building}
	if out.Skipped == nil {
		out.Skipped = []string{}
	}
	return out
}

func (c *Console) handleSnapshots(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	list, err := c.meta().SnapshotList(ctx)
	if err != nil {
		nsError(w, "list the snapshots", err)
		return
	}
	out := []snapshotJSON{}
	for _, s := range list {
		out = append(out, snapshotOut(s))
	}
	writeJSON(w, http.StatusOK, map[string]any{"snapshots": out})
}

type snapshotReq struct {
	Path string `json:"path"` // the directory to snapshot
	Name string `json:"name"`
}

func (c *Console) handleSnapshotCreate(w http.ResponseWriter, r *http.Request) {
	var req snapshotReq
	if !readJSON(w, r, &req) {
		return
	}
	p, err := cleanPath(req.Path)
	if err != nil {
		apiError(w, http.StatusBadRequest, "bad_path", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
	defer cancel()
	in, err := c.meta().Resolve(ctx, p, true)
	if err != nil {
		nsError(w, "snapshot "+p, err)
		return
	}
	if in.Type != metaapi.TypeDir {
		apiError(w, http.StatusBadRequest, "not_dir", p+" is not a directory")
		return
	}
	s, err := c.meta().SnapshotCreate(ctx, in.ID, req.Name)
	if err != nil {
		nsError(w, "snapshot "+p, err)
		return
	}
	c.auditAction(r, "snapshot "+req.Name+" of "+p)
	writeJSON(w, http.StatusOK, snapshotOut(s))
}

type snapshotDeleteReq struct {
	Top  uint64 `json:"top"`
	Name string `json:"name"`
}

func (c *Console) handleSnapshotDelete(w http.ResponseWriter, r *http.Request) {
	var req snapshotDeleteReq
	if !readJSON(w, r, &req) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if err := c.meta().SnapshotDelete(ctx, req.Top, req.Name); err != nil {
		nsError(w, "delete snapshot "+req.Name, err)
		return
	}
	c.auditAction(r, "delete snapshot "+req.Name)
	writeJSON(w, http.StatusOK, map[string]string{"deleted": req.Name})
}
