package storaged

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/storaged/craq"
)

func TestForwardOutcome(t *testing.T) {
	write := &storageapi.WriteReq{Kind: storageapi.KindWrite, UpdateVer: 5}
	remove := &storageapi.WriteReq{Kind: storageapi.KindRemove, UpdateVer: 5}
	committedAt := func(v uint32) *storageapi.WriteResp {
		return &storageapi.WriteResp{Meta: storageapi.ChunkMeta{CommitVer: v, UpdateVer: v}}
	}
	fail := func(code rpc.Code) error { return rpc.Errorf(code, "test") }
	cases := []struct {
		name string
		fwd  *storageapi.WriteReq
		resp *storageapi.WriteResp
		err  error
		want craq.ForwardOutcome
	}{
		{"an ack at the version", write, committedAt(5), nil, craq.ForwardAcked},
		{"an ack past the version (committed by a later update)", write, committedAt(6), nil, craq.ForwardAcked},
		{"an ack below the version", write, committedAt(4), nil, craq.ForwardAckedBehind},
		{"an ack of a remove carries no versions", remove, &storageapi.WriteResp{}, nil, craq.ForwardAcked},
		{"a gap", write, nil, fail(storageapi.CodeMissingUpdate), craq.ForwardGap},
		{"a chain version mismatch: routing is moving", write, nil, fail(storageapi.CodeChainVersion), craq.ForwardUnreachable},
		{"the successor's node has no such target", write, nil, fail(storageapi.CodeNoTarget), craq.ForwardUnreachable},
		{"the successor does not take writes now", write, nil, fail(storageapi.CodeTargetNotServing), craq.ForwardUnreachable},
		{"the channel is busy", write, nil, fail(storageapi.CodeChannelBusy), craq.ForwardUnreachable},
		{"the successor cannot be reached", write, nil, fail(rpc.Unavailable), craq.ForwardUnreachable},
		{"the successor's disk failed an I/O", write, nil, fail(storageapi.CodeDiskError), craq.ForwardUnreachable},
		{"the successor's disk turned read-only", write, nil, fail(storageapi.CodeReadOnly), craq.ForwardUnreachable},
		{"a timeout on the wire", write, nil, fail(rpc.DeadlineExceeded), craq.ForwardUnreachable},
		{"a local timeout", write, nil, fmt.Errorf("write: %w", context.DeadlineExceeded), craq.ForwardUnreachable},
		{"cancelled: routing no longer names the successor", write, nil, fmt.Errorf("write: %w", context.Canceled), craq.ForwardUnreachable},
		{"cancelled on the wire", write, nil, fail(rpc.Canceled), craq.ForwardUnreachable},
		{"the successor broke an invariant", write, nil, fail(rpc.Internal), craq.ForwardUnreachable},
		{"the successor's disk is full", write, nil, fail(storageapi.CodeNoSpace), craq.ForwardRefused},
		{"the payload's checksum does not match", write, nil, fail(storageapi.CodeBadChecksum), craq.ForwardRefused},
		{"a chunk size mismatch", write, nil, fail(storageapi.CodeChunkSizeMismatch), craq.ForwardRefused},
		{"the chunk is corrupt at the successor", write, nil, fail(rpc.DataLoss), craq.ForwardRefused},
		{"an error without a code", write, nil, errors.New("boom"), craq.ForwardRefused},
	}
	for _, c := range cases {
		if got := forwardOutcome(c.fwd, c.resp, c.err); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
