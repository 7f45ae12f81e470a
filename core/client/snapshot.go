package client

import (
	"context"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// SnapshotCreate snapshots directory dir as name (metad's Snapshot: one
// transaction, files sharing chunks, read-only under the top directory's
// .flyfs-snapshots).
func (m *Meta) SnapshotCreate(ctx context.Context, dir uint64, name string) (metaapi.Snapshot, error) {
	req := &metaapi.SnapshotCreateReq{ReqID: newReqID(), Dir: dir, Name: name}
	resp, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.SnapshotResp, error) { return c.SnapshotCreate(ctx, req) })
	if err != nil {
		return metaapi.Snapshot{}, err
	}
	return resp.Snapshot, nil
}

// SnapshotList returns every snapshot.
func (m *Meta) SnapshotList(ctx context.Context) ([]metaapi.Snapshot, error) {
	resp, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.SnapshotListResp, error) { return c.SnapshotList(ctx) })
	if err != nil {
		return nil, err
	}
	return resp.Snapshots, nil
}

// SnapshotDelete removes snapshot name of top directory top.
func (m *Meta) SnapshotDelete(ctx context.Context, top uint64, name string) error {
	req := &metaapi.SnapshotDeleteReq{ReqID: newReqID(), Top: top, Name: name}
	_, err := callMeta(ctx, m.fs, func(c metaapi.Client) (struct{}, error) { return struct{}{}, c.SnapshotDelete(ctx, req) })
	return err
}
