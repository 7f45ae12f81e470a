package client

import (
	"context"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// TrashList returns what the trash holds, oldest first, and how many days
// it keeps entries (0: the trash is off).
func (m *Meta) TrashList(ctx context.Context) ([]metaapi.TrashEntry, int, error) {
	resp, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.TrashListResp, error) { return c.TrashList(ctx) })
	if err != nil {
		return nil, 0, err
	}
	return resp.Entries, resp.Days, nil
}

// TrashRestore moves the trashed entry of ino back where it was, or into
// directory toParent as toName (toParent 0: where it was); it returns
// where it went.
func (m *Meta) TrashRestore(ctx context.Context, ino, toParent uint64, toName string) (string, error) {
	req := &metaapi.TrashRestoreReq{ReqID: newReqID(), Ino: ino, ToParent: toParent, ToName: toName}
	resp, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.TrashRestoreResp, error) { return c.TrashRestore(ctx, req) })
	if err != nil {
		return "", err
	}
	return resp.Path, nil
}

// TrashEmpty removes everything in the trash for good now and returns how
// many of its hour directories went (their files are collected by GC).
func (m *Meta) TrashEmpty(ctx context.Context) (int, error) {
	resp, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.TrashEmptyResp, error) { return c.TrashEmpty(ctx) })
	if err != nil {
		return 0, err
	}
	return resp.Hours, nil
}

// ListSessions returns up to limit of the namespace's write sessions (the
// files open for writing, by client; 0: metad's default) and whether there
// are more.
func (m *Meta) ListSessions(ctx context.Context, limit int) ([]metaapi.OpenFile, bool, error) {
	resp, err := callMeta(ctx, m.fs, func(c metaapi.Client) (*metaapi.ListSessionsResp, error) {
		return c.ListSessions(ctx, &metaapi.ListSessionsReq{Limit: limit})
	})
	if err != nil {
		return nil, false, err
	}
	return resp.Sessions, resp.More, nil
}
