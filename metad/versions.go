package metad

import (
	"context"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/metad/ns"
)

// serveVersions registers the versioned-bucket calls.
func (s *Server) serveVersions() {
	handle(s, metaapi.MethodSetVersioning, s.setVersioning)
	handle(s, metaapi.MethodGetVersioning, s.getVersioning)
	handle(s, metaapi.MethodListVersions, s.listVersions)
	handle(s, metaapi.MethodGetVersion, s.getVersion)
	handle(s, metaapi.MethodDeleteKey, s.deleteKey)
	handle(s, metaapi.MethodDeleteVersion, s.deleteVersion)
	handle(s, metaapi.MethodVersionScope, s.versionScope)
	handle(s, metaapi.MethodSetRetention, s.setRetention)
	handle(s, metaapi.MethodTrashList, s.trashList)
	handle(s, metaapi.MethodTrashRestore, s.trashRestore)
	handle(s, metaapi.MethodTrashEmpty, s.trashEmpty)
	handle(s, metaapi.MethodListSessions, s.listSessions)
	handle(s, metaapi.MethodClone, s.clone)
	handle(s, metaapi.MethodCloneInto, s.cloneInto)
	handle(s, metaapi.MethodSnapshotCreate, s.snapshotCreate)
	handle(s, metaapi.MethodSnapshotList, s.snapshotList)
	handle(s, metaapi.MethodSnapshotDelete, s.snapshotDelete)
}

func (s *Server) versionScope(ctx context.Context, r *metaapi.InodeReq, _ []byte) (*metaapi.VersionScopeResp, []byte, error) {
	b, dk, st, err := s.ns.VersionScope(ctx, r.Ino)
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.VersionScopeResp{Bucket: b, DirKey: dk, State: metaapi.Versioning(st)}, nil, nil
}

func (s *Server) setVersioning(ctx context.Context, r *metaapi.VersioningReq, _ []byte) (*metaapi.Empty, []byte, error) {
	return empty(s.ns.SetVersioning(ctx, r.Bucket, ns.Versioning(r.State)))
}

func (s *Server) getVersioning(ctx context.Context, r *metaapi.VersioningReq, _ []byte) (*metaapi.VersioningResp, []byte, error) {
	st, err := s.ns.GetVersioning(ctx, r.Bucket)
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.VersioningResp{State: metaapi.Versioning(st)}, nil, nil
}

func versionToWire(e ns.VersionEntry) metaapi.VersionEntry {
	w := metaapi.VersionEntry{Key: e.Key, Seq: e.Seq, ID: e.ID, Time: e.Time, DeleteMarker: !e.Prefix && e.DeleteMarker(), Prefix: e.Prefix}
	if e.Inode != nil {
		in := listWire(*e.Inode)
		w.Inode = &in
	}
	return w
}

func (s *Server) listVersions(ctx context.Context, r *metaapi.ListVersionsReq, _ []byte) (*metaapi.ListVersionsResp, []byte, error) {
	limit := r.Limit
	if limit <= 0 || limit > metaapi.MaxListVersions {
		limit = metaapi.MaxListVersions
	}
	es, more, err := s.ns.ListVersions(ctx, ns.ListVersionsRequest{Bucket: r.Bucket, Prefix: r.Prefix, Delimiter: r.Delimiter,
		AfterKey: r.AfterKey, AfterSeq: r.AfterSeq, Limit: limit})
	if err != nil {
		return nil, nil, wire(err)
	}
	resp := &metaapi.ListVersionsResp{More: more, Entries: make([]metaapi.VersionEntry, 0, len(es))}
	for _, e := range es {
		resp.Entries = append(resp.Entries, versionToWire(e))
	}
	return resp, nil, nil
}

func (s *Server) getVersion(ctx context.Context, r *metaapi.VersionReq, _ []byte) (*metaapi.VersionEntry, []byte, error) {
	e, err := s.ns.GetVersion(ctx, r.Bucket, r.Key, r.ID)
	if err != nil {
		return nil, nil, wire(err)
	}
	w := versionToWire(e)
	return &w, nil, nil
}

func (s *Server) deleteKey(ctx context.Context, r *metaapi.DeleteKeyReq, _ []byte) (*metaapi.DeleteKeyResp, []byte, error) {
	id, err := s.ns.DeleteKey(ctx, ns.RequestID(r.ReqID), r.Bucket, r.Key, ns.Cond{Ino: r.IfIno, Gen: r.IfGen}, r.PruneImplicit)
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.DeleteKeyResp{Marker: id}, nil, nil
}

func (s *Server) deleteVersion(ctx context.Context, r *metaapi.DeleteVersionReq, _ []byte) (*metaapi.DeleteVersionResp, []byte, error) {
	res, err := s.ns.DeleteVersion(ctx, ns.RequestID(r.ReqID), r.Bucket, r.Key, r.ID, ns.DeleteOptions{PruneImplicit: r.PruneImplicit, BypassGovernance: r.BypassGovernance})
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.DeleteVersionResp{DeleteMarker: res.DeleteMarker, Promoted: res.Promoted}, nil, nil
}
