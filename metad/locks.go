package metad

import (
	"context"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/metad/ns"
)

func (s *Server) lockSession(ctx context.Context, r *metaapi.LockSessionReq, _ []byte) (*metaapi.Empty, []byte, error) {
	if r.TTLms <= 0 {
		return empty(s.ns.EndLockSession(ctx, r.Client))
	}
	return empty(s.ns.RenewLockSession(ctx, r.Client, time.Duration(r.TTLms)*time.Millisecond))
}

func rangeLock(l metaapi.FileLock) ns.RangeLock {
	return ns.RangeLock{Holder: ns.LockOwner{Client: l.Client, Owner: l.Owner}, Kind: ns.LockKind(l.Kind), Start: l.Start, End: l.End, Pid: l.Pid}
}

func (s *Server) getLock(ctx context.Context, r *metaapi.LockReq, _ []byte) (*metaapi.GetLockResp, []byte, error) {
	l, found, err := s.ns.GetLock(ctx, r.Ino, ns.LockClass(r.Class), rangeLock(r.Lock))
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.GetLockResp{Found: found, Lock: metaapi.FileLock{Client: l.Holder.Client, Owner: l.Holder.Owner,
		Kind: uint8(l.Kind), Start: l.Start, End: l.End, Pid: l.Pid}}, nil, nil
}

func (s *Server) setLock(ctx context.Context, r *metaapi.LockReq, _ []byte) (*metaapi.Empty, []byte, error) {
	return empty(s.ns.SetLock(ctx, r.Ino, ns.LockClass(r.Class), rangeLock(r.Lock), r.Unlock))
}
