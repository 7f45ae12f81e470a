package client

import (
	"context"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Versioned buckets: their state and the records of their keys
// (metad/ns/versions.go has the rules).

// SetVersioning sets the versioning state of bucket (its directory's inode).
func (m *Meta) SetVersioning(ctx context.Context, bucket uint64, st metaapi.Versioning) error {
	req := &metaapi.VersioningReq{Bucket: bucket, State: st}
	_, err := callMeta(ctx, m.fs, func(c metaapi.Client) (struct{}, error) { return struct{}{}, c.SetVersioning(ctx, req) })
	return err
}

// GetVersioning returns the versioning state of bucket.
func (m *Meta) GetVersioning(ctx context.Context, bucket uint64) (metaapi.Versioning, error) {
	req := &metaapi.VersioningReq{Bucket: bucket}
	resp, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.VersioningResp, error) { return c.GetVersioning(ctx, req) })
	if err != nil {
		return 0, err
	}
	return resp.State, nil
}

// ListVersions returns a page of bucket's records (and common prefixes).
func (m *Meta) ListVersions(ctx context.Context, req metaapi.ListVersionsReq) (*metaapi.ListVersionsResp, error) {
	return callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.ListVersionsResp, error) { return c.ListVersions(ctx, &req) })
}

// GetVersion returns key's record with id (not the current version).
func (m *Meta) GetVersion(ctx context.Context, bucket uint64, key, id string) (*metaapi.VersionEntry, error) {
	req := &metaapi.VersionReq{Bucket: bucket, Key: key, ID: id}
	return callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.VersionEntry, error) { return c.GetVersion(ctx, req) })
}

// DeleteKey deletes a key of a versioned bucket (conditions and pruning in
// req), leaving a delete marker, whose id it returns.
func (m *Meta) DeleteKey(ctx context.Context, req metaapi.DeleteKeyReq) (string, error) {
	req.ReqID = newReqID()
	resp, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.DeleteKeyResp, error) { return c.DeleteKey(ctx, &req) })
	if err != nil {
		return "", err
	}
	return resp.Marker, nil
}

// DeleteVersion deletes one version of a key for good (what, pruning and
// the governance bypass in req).
func (m *Meta) DeleteVersion(ctx context.Context, req metaapi.DeleteVersionReq) (*metaapi.DeleteVersionResp, error) {
	req.ReqID = newReqID()
	return callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.DeleteVersionResp, error) { return c.DeleteVersion(ctx, &req) })
}

// SetRetention changes a file's object lock.
func (m *Meta) SetRetention(ctx context.Context, req metaapi.RetentionReq) (metaapi.Inode, error) {
	resp, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.InodeResp, error) { return c.SetRetention(ctx, &req) })
	if err != nil {
		return metaapi.Inode{}, err
	}
	return resp.Inode, nil
}

// VersionScope says where dir's names are as keys of a versioned bucket.
func (m *Meta) VersionScope(ctx context.Context, dir uint64) (*metaapi.VersionScopeResp, error) {
	return callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.VersionScopeResp, error) { return c.VersionScope(ctx, dir) })
}
