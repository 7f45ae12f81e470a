package metad

import (
	"context"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Bounds of one session listing.
const (
	defaultSessionList = 1000
	maxSessionList     = 10000
)

func (s *Server) listSessions(ctx context.Context, r *metaapi.ListSessionsReq, _ []byte) (*metaapi.ListSessionsResp, []byte, error) {
	limit := r.Limit
	if limit <= 0 {
		limit = defaultSessionList
	}
	limit = min(limit, maxSessionList)
	fs, more, err := s.ns.ListSessions(ctx, limit)
	if err != nil {
		return nil, nil, wire(err)
	}
	resp := &metaapi.ListSessionsResp{More: more}
	for _, f := range fs {
		resp.Sessions = append(resp.Sessions, metaapi.OpenFile{Ino: f.Ino, Client: string(f.Client), Opened: f.Opened, Path: f.Path, Length: f.Length})
	}
	return resp, nil, nil
}
