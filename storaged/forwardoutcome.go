package storaged

import (
	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/storaged/craq"
)

// successorUnreachable are the answers to a forward that mean the successor is
// down, busy or being replaced, or routing is moving, so a later attempt may
// succeed. Canceled is also how an attempt ends when routing stops naming its
// successor.
var successorUnreachable = map[rpc.Code]bool{
	storageapi.CodeChainVersion:     true,
	storageapi.CodeNoTarget:         true,
	storageapi.CodeTargetNotServing: true,
	storageapi.CodeChannelBusy:      true,
	storageapi.CodeDiskError:        true, // its disk failed: it reports itself offline, and routing drops it
	storageapi.CodeReadOnly:         true,
	rpc.Unavailable:                 true,
	rpc.DeadlineExceeded:            true,
	rpc.Canceled:                    true,
	rpc.Internal:                    true,
}

// forwardOutcome classifies the successor's answer to the forward fwd. A
// remove's ack carries no versions, so any ack of one counts.
func forwardOutcome(fwd *storageapi.WriteReq, resp *storageapi.WriteResp, err error) craq.ForwardOutcome {
	code := rpc.CodeOf(err)
	switch {
	case err == nil && fwd.Kind != storageapi.KindRemove && resp.Meta.CommitVer < fwd.UpdateVer:
		return craq.ForwardAckedBehind
	case err == nil:
		return craq.ForwardAcked
	case code == storageapi.CodeMissingUpdate:
		return craq.ForwardGap
	case successorUnreachable[code]:
		return craq.ForwardUnreachable
	}
	return craq.ForwardRefused
}
