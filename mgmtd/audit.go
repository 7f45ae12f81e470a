package mgmtd

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/rpc"
)

// The audit trail: every admin action (chains set, targets held or
// released, node maintenance) and those a front end reports (the console's
// key and namespace changes), with who asked and how it ended, in the shared
// KV store so any mgmtd serves it and it outlives a failover. Records older
// than auditKeep are cleared as new ones come.

const auditKeep = 90 * 24 * time.Hour

func auditKey(at int64) []byte {
	k := append([]byte(nil), auditTag...)
	k = binary.BigEndian.AppendUint64(k, uint64(at))
	return binary.BigEndian.AppendUint32(k, rand.Uint32())
}

// audit records an action and its result; a failure to record is logged,
// never the action's failure.
func (s *Server) audit(ctx context.Context, by, action string, result error) {
	if rpc.CodeOf(result) == mgmtdapi.CodeNotPrimary {
		return // not done here; the primary records it
	}
	if by == "" {
		by = "unknown (an RPC without a name)"
	}
	rec := mgmtdapi.AuditRecord{At: time.Now().UnixNano(), By: by, Action: action, Result: "ok"}
	if result != nil {
		rec.Result = result.Error()
	}
	s.appendAudit(ctx, rec)
}

func (s *Server) appendAudit(ctx context.Context, rec mgmtdapi.AuditRecord) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := s.cfg.KV.Run(ctx, func(tx kv.Txn) error {
		tx.Set(auditKey(rec.At), encode(rec))
		tx.ClearRange(auditTag, auditKey(rec.At - int64(auditKeep))[:len(auditTag)+8])
		return nil
	})
	if err != nil {
		s.log.Warn("audit record not written", "by", rec.By, "action", rec.Action, "err", err)
	}
}

func (s *Server) handleAudit(ctx context.Context, req *mgmtdapi.AuditReq, _ []byte) (*mgmtdapi.AuditResp, []byte, error) {
	r := req.Record
	if r.By == "" || r.Action == "" || len(r.By) > 256 || len(r.Action) > 1024 || len(r.Result) > 1024 {
		return nil, nil, rpc.Errorf(rpc.InvalidArgument, "audit: by and action are required (by <= 256, action and result <= 1024 bytes)")
	}
	if s.primaryTerm() == nil {
		return nil, nil, s.notPrimary()
	}
	if r.Result == "" {
		r.Result = "ok"
	}
	r.At = time.Now().UnixNano()
	s.appendAudit(ctx, r)
	return &mgmtdapi.AuditResp{}, nil, nil
}

func (s *Server) handleListAudit(ctx context.Context, req *mgmtdapi.ListAuditReq, _ []byte) (*mgmtdapi.ListAuditResp, []byte, error) {
	limit := req.Limit
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	end := kv.PrefixRange(auditTag).End
	if req.Before > 0 {
		end = auditKey(req.Before)[:len(auditTag)+8]
	}
	resp := &mgmtdapi.ListAuditResp{Records: []mgmtdapi.AuditRecord{}}
	err := s.cfg.KV.RunRead(ctx, func(tx kv.ReadTxn) error {
		resp.Records = resp.Records[:0]
		res, err := tx.GetRange(ctx, auditTag, end, kv.RangeOptions{Limit: limit, Reverse: true})
		if err != nil {
			return err
		}
		for _, kvp := range res.KVs {
			var r mgmtdapi.AuditRecord
			if err := decode(kvp.Value, &r); err != nil {
				return err
			}
			resp.Records = append(resp.Records, r)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return resp, nil, nil
}
