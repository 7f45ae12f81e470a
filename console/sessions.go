package console

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
)

// The clients page: every client the cluster manager knows (mounts, the
// front ends' shared client), and the files open for writing, by client.

type clientJSON struct {
	ID       string     `json:"id"`
	Alive    bool       `json:"alive"`
	LastSeen *time.Time `json:"lastSeen"`
	Open     int        `json:"open"` // its write sessions
}

type openFileJSON struct {
	Ino    uint64     `json:"ino"`
	Client string     `json:"client"`
	Path   string     `json:"path"` // where a create opened it ("" for an open by inode)
	Size   uint64     `json:"size"`
	Opened *time.Time `json:"opened"`
	// Known: the client is registered; a session of an unknown client is
	// closed by metad once the registry is complete.
	Known bool `json:"known"`
}

type sessionsJSON struct {
	Clients  []clientJSON   `json:"clients"`
	Sessions []openFileJSON `json:"sessions"`
	More     bool           `json:"more"` // the list was cut at its limit
}

// sessionListLimit is how many sessions the page lists.
const sessionListLimit = 1000

func (c *Console) handleSessions(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	svcs, err := c.mgmtd.Services(ctx, mgmtdapi.KindClient)
	if err != nil {
		clusterDown(w, err)
		return
	}
	fs, more, err := c.meta().ListSessions(ctx, sessionListLimit)
	if err != nil {
		nsError(w, "list the open files", err)
		return
	}
	out := sessionsJSON{Clients: []clientJSON{}, Sessions: []openFileJSON{}, More: more}
	open := map[string]int{}
	for _, f := range fs {
		open[f.Client]++
	}
	known := map[string]bool{}
	for _, s := range svcs.Services {
		known[s.ID] = true
		out.Clients = append(out.Clients, clientJSON{ID: s.ID, Alive: s.Alive, LastSeen: unixTime(s.LastSeen), Open: open[s.ID]})
	}
	slices.SortFunc(out.Clients, func(a, b clientJSON) int { return cmp.Compare(a.ID, b.ID) })
	for _, f := range fs {
		out.Sessions = append(out.Sessions, openFileJSON{Ino: f.Ino, Client: f.Client, Path: f.Path, Size: f.Length, Opened: unixTime(f.Opened), Known: known[f.Client]})
	}
	writeJSON(w, http.StatusOK, out)
}
