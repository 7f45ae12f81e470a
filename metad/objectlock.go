package metad

import (
	"context"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/metad/ns"
)

func (s *Server) setRetention(ctx context.Context, r *metaapi.RetentionReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	return inodeResp(s.ns.SetRetention(ctx, r.Ino, ns.Retention{SetRetention: r.SetRetention, Mode: ns.RetainMode(r.Mode), Until: r.Until,
		SetHold: r.SetHold, LegalHold: r.LegalHold, Bypass: r.Bypass}))
}

// lockOf is a rename's lock for the namespace.
func lockOf(l *metaapi.ObjectLock) *ns.Retention {
	if l == nil {
		return nil
	}
	return &ns.Retention{SetRetention: l.Mode != metaapi.RetainNone, Mode: ns.RetainMode(l.Mode), Until: l.Until, SetHold: l.LegalHold, LegalHold: l.LegalHold}
}
