package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// The admin API manages access keys over the gateway's own port, signed
// with SigV4 by the root key (so `flyfs admin keys` works against a running
// `flyfs server`, whose KV store no other process may open):
//
//	GET    /_flyfs/admin/keys        list (secrets omitted)
//	POST   /_flyfs/admin/keys        create: JSON AccessKey (id/secret optional); answers the key with its secret
//	DELETE /_flyfs/admin/keys/{id}   revoke
//
// "_flyfs" is not a valid bucket name, so no bucket can shadow these paths.

const adminKeysPath = "/_flyfs/admin/keys"

func (g *Gateway) serveAdmin(w http.ResponseWriter, r *http.Request, rc *reqCtx) {
	if rc.key == nil || !rc.key.Root {
		g.writeError(w, r, errCode("AccessDenied", "The admin API needs the root key."))
		return
	}
	ctx := r.Context()
	writeJSON := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	fail := func(status int, msg string) { writeJSON(status, map[string]string{"error": msg}) }
	switch {
	case r.URL.Path == adminKeysPath && r.Method == http.MethodGet:
		keys, err := g.keys.List(ctx)
		if err != nil {
			fail(http.StatusInternalServerError, err.Error())
			return
		}
		for i := range keys {
			keys[i].Secret = ""
		}
		if keys == nil {
			keys = []AccessKey{}
		}
		writeJSON(http.StatusOK, keys)
	case r.URL.Path == adminKeysPath && r.Method == http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(rc.body, 64<<10))
		if err != nil {
			fail(http.StatusBadRequest, err.Error())
			return
		}
		var k AccessKey
		if err := json.Unmarshal(body, &k); err != nil {
			fail(http.StatusBadRequest, "body: "+err.Error())
			return
		}
		if k.Root {
			fail(http.StatusBadRequest, "keys made through the admin API cannot be root keys")
			return
		}
		if k.ID == g.root.ID {
			fail(http.StatusConflict, "that id is the root key's")
			return
		}
		nk, err := g.keys.Create(ctx, k)
		if errors.Is(err, errAccessKeyExists) {
			fail(http.StatusConflict, err.Error())
			return
		}
		if err != nil {
			fail(http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(http.StatusCreated, nk)
	case strings.HasPrefix(r.URL.Path, adminKeysPath+"/") && r.Method == http.MethodDelete:
		id := strings.TrimPrefix(r.URL.Path, adminKeysPath+"/")
		if id == g.root.ID && g.cfg.RootAccessKey != "" {
			fail(http.StatusBadRequest, "the root key comes from the environment; change it there")
			return
		}
		existed, err := g.keys.Revoke(ctx, id)
		if err != nil {
			fail(http.StatusInternalServerError, err.Error())
			return
		}
		if !existed {
			fail(http.StatusNotFound, "no access key "+id)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		fail(http.StatusNotFound, "no such admin call: "+r.Method+" "+r.URL.Path)
	}
}

// stagingMaxAge: staging files and directories older than this belong to
// requests that died (a crash mid-PUT); the sweeper removes them.
const stagingMaxAge = 24 * time.Hour

// sweepStaging removes stale staging files now and then.
func (g *Gateway) sweepStaging() {
	defer g.wg.Done()
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		g.sweepOnce(context.Background(), time.Now().Add(-stagingMaxAge))
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
	}
}

func (g *Gateway) sweepOnce(ctx context.Context, before time.Time) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	after := ""
	for {
		select {
		case <-g.stop:
			return
		default:
		}
		ents, more, err := g.meta.ReadDir(ctx, g.stagingIno, after, 1000, true)
		if err != nil {
			return
		}
		for _, e := range ents {
			after = e.Name
			if e.Inode != nil && time.Unix(0, e.Inode.Mtime).Before(before) {
				g.meta.RemoveAll(ctx, g.stagingIno, e.Name)
			}
		}
		if !more || len(ents) == 0 {
			return
		}
	}
}

var _ = metaapi.TypeFile
