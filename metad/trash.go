package metad

import (
	"context"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/metad/ns"
)

func (s *Server) trashList(ctx context.Context, _ *metaapi.Empty, _ []byte) (*metaapi.TrashListResp, []byte, error) {
	es, err := s.ns.ListTrash(ctx)
	if err != nil {
		return nil, nil, wire(err)
	}
	resp := &metaapi.TrashListResp{Days: s.ns.TrashDays()}
	for _, e := range es {
		resp.Entries = append(resp.Entries, metaapi.TrashEntry{Ino: e.Ino, Path: e.Path, Type: metaapi.Type(e.Type), Length: e.Length,
			At: e.At.UnixNano(), Trash: e.Trash})
	}
	return resp, nil, nil
}

func (s *Server) trashEmpty(ctx context.Context, _ *metaapi.Empty, _ []byte) (*metaapi.TrashEmptyResp, []byte, error) {
	n, err := s.ns.EmptyTrash(ctx)
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.TrashEmptyResp{Hours: n}, nil, nil
}

func (s *Server) trashRestore(ctx context.Context, r *metaapi.TrashRestoreReq, _ []byte) (*metaapi.TrashRestoreResp, []byte, error) {
	p, err := s.ns.RestoreTrash(ctx, ns.RequestID(r.ReqID), r.Ino, r.ToParent, r.ToName)
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.TrashRestoreResp{Path: p}, nil, nil
}
