package console

import (
	"context"
	"net/http"
	"time"
)

// Cluster tasks an admin runs from the console: collect removed files now,
// and check the namespace (fsck). Both are audited.

type collectReq struct {
	NoGrace bool `json:"noGrace"` // also files still in their grace period
}

type collectJSON struct {
	Files     int64  `json:"files"`
	Bytes     uint64 `json:"bytes"`
	QueueLeft int64  `json:"queueLeft"`
}

func (c *Console) handleCollect(w http.ResponseWriter, r *http.Request) {
	var req collectReq
	if !readJSON(w, r, &req) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute)
	defer cancel()
	res, err := c.meta().Collect(ctx, req.NoGrace)
	if err != nil {
		nsError(w, "collect removed files", err)
		return
	}
	what := "collect removed files now"
	if req.NoGrace {
		what += ", grace period included"
	}
	c.auditAction(r, what)
	writeJSON(w, http.StatusOK, collectJSON{Files: res.Files, Bytes: res.Bytes, QueueLeft: res.QueueLeft})
}

type fsckJSON struct {
	Summary  string   `json:"summary"`
	Inodes   int      `json:"inodes"`
	Files    int      `json:"files"`
	Dirs     int      `json:"dirs"`
	GCQueued int      `json:"gcQueued"`
	Problems []string `json:"problems"`
}

func (c *Console) handleFsck(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute)
	defer cancel()
	res, err := c.meta().Fsck(ctx)
	if err != nil {
		nsError(w, "check the namespace", err)
		return
	}
	c.auditAction(r, "check the namespace (fsck)")
	out := fsckJSON{Summary: res.Summary, Inodes: res.Inodes, Files: res.Files, Dirs: res.Dirs, GCQueued: res.GCQueued, Problems: res.Problems}
	if out.Problems == nil {
		out.Problems = []string{}
	}
	writeJSON(w, http.StatusOK, out)
}

// gcQueueJSON is what the GC queue holds: every entry, and those past
// their grace period (the next collection's).
type gcQueueJSON struct {
	Entries      int64  `json:"entries"`
	Bytes        uint64 `json:"bytes"`
	Due          int64  `json:"due"`
	DueBytes     uint64 `json:"dueBytes"`
	GraceSeconds int64  `json:"graceSeconds"`
}

func (c *Console) handleGCQueue(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	st, err := c.meta().StatFS(ctx)
	if err != nil {
		nsError(w, "read the GC queue", err)
		return
	}
	writeJSON(w, http.StatusOK, gcQueueJSON{Entries: st.GCQueue, Bytes: st.GCBytes, Due: st.GCDue, DueBytes: st.GCDueBytes, GraceSeconds: st.GCGraceSec})
}
