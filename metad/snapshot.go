package metad

import (
	"context"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/metad/ns"
)

func snapshotWire(s ns.SnapshotInfo) metaapi.Snapshot {
	return metaapi.Snapshot{Top: s.Top, Name: s.Name, Root: s.Root, Source: s.Source, Path: s.Path, Created: s.Created,
		Files: s.Files, Dirs: s.Dirs, Others: s.Others, Bytes: s.Bytes, Skipped: s.Skipped, Batches: s.Batches, Building: s.Building}
}

func (s *Server) snapshotCreate(ctx context.Context, r *metaapi.SnapshotCreateReq, _ []byte) (*metaapi.SnapshotResp, []byte, error) {
	info, err := s.ns.Snapshot(ctx, ns.SnapshotRequest{ReqID: ns.RequestID(r.ReqID), Dir: r.Dir, Name: r.Name})
	if err != nil {
		return nil, nil, wire(err)
	}
	s.log.Info("snapshot made", "name", info.Name, "source", info.Source, "path", info.Path, "files", info.Files, "skipped", len(info.Skipped))
	return &metaapi.SnapshotResp{Snapshot: snapshotWire(info)}, nil, nil
}

func (s *Server) snapshotList(ctx context.Context, _ *metaapi.Empty, _ []byte) (*metaapi.SnapshotListResp, []byte, error) {
	list, err := s.ns.ListSnapshots(ctx)
	if err != nil {
		return nil, nil, wire(err)
	}
	resp := &metaapi.SnapshotListResp{}
	for _, sn := range list {
		resp.Snapshots = append(resp.Snapshots, snapshotWire(sn))
	}
	return resp, nil, nil
}

func (s *Server) snapshotDelete(ctx context.Context, r *metaapi.SnapshotDeleteReq, _ []byte) (*metaapi.Empty, []byte, error) {
	if err := s.ns.DeleteSnapshot(ctx, ns.RequestID(r.ReqID), r.Top, r.Name); err != nil {
		return nil, nil, wire(err)
	}
	s.log.Info("snapshot deleted", "name", r.Name, "top", r.Top)
	return &metaapi.Empty{}, nil, nil
}
