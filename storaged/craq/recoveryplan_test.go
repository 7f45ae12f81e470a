package craq

import (
	"reflect"
	"testing"

	"github.com/flyfs/flyfs/core/layout"
)

func TestPlanRecovery(t *testing.T) {
	type chunks = map[layout.ChunkID]ChunkState
	id := layout.MakeChunkID
	// committed is a settled chunk of n bytes at chain version 3.
	committed := func(ver, n uint32) ChunkState {
		return ChunkState{ChainVer: 3, CommitVer: ver, UpdateVer: ver, Len: n}
	}
	send := func(c layout.ChunkID) RecoveryStep { return RecoveryStep{Chunk: c, Action: SyncSend} }
	remove := func(c layout.ChunkID) RecoveryStep { return RecoveryStep{Chunk: c, Action: SyncRemove} }

	cases := []struct {
		name          string
		local, remote chunks
		want          RecoveryPlan
	}{
		{
			name: "nothing on either side: nothing to do",
			want: RecoveryPlan{},
		},
		{
			name:   "equal copies are skipped",
			local:  chunks{id(1, 0): committed(5, 100), id(1, 1): committed(2, 10)},
			remote: chunks{id(1, 0): committed(5, 100), id(1, 1): committed(2, 10)},
			want:   RecoveryPlan{Skipped: 2},
		},
		{
			name:  "a chunk only on the predecessor is sent, and its bytes counted",
			local: chunks{id(1, 0): committed(5, 100)},
			want:  RecoveryPlan{Steps: []RecoveryStep{send(id(1, 0))}, SendBytes: 100},
		},
		{
			name:   "a chunk only on the returning target is removed, and costs no bytes",
			remote: chunks{id(1, 0): committed(5, 100)},
			want:   RecoveryPlan{Steps: []RecoveryStep{remove(id(1, 0))}},
		},
		{
			name:   "a higher chain version on the predecessor is sent",
			local:  chunks{id(1, 0): {ChainVer: 4, CommitVer: 5, UpdateVer: 5, Len: 7}},
			remote: chunks{id(1, 0): committed(5, 7)},
			want:   RecoveryPlan{Steps: []RecoveryStep{send(id(1, 0))}, SendBytes: 7},
		},
		{
			name:   "a stale copy on the returning target is sent at the predecessor's length",
			local:  chunks{id(1, 0): committed(7, 300)},
			remote: chunks{id(1, 0): committed(5, 200)},
			want:   RecoveryPlan{Steps: []RecoveryStep{send(id(1, 0))}, SendBytes: 300},
		},
		{
			name:   "the same update in flight on both is skipped: the chain commits it",
			local:  chunks{id(1, 0): {ChainVer: 3, CommitVer: 5, UpdateVer: 6, Len: 9}},
			remote: chunks{id(1, 0): {ChainVer: 3, CommitVer: 5, UpdateVer: 6, Len: 9}},
			want:   RecoveryPlan{Skipped: 1},
		},
		{
			name: "removals come first, then sends, each in chunk id order",
			local: chunks{
				id(2, 0): committed(1, 1), id(1, 0): committed(1, 2), id(3, 0): committed(1, 4),
				id(5, 0): committed(1, 8),
			},
			remote: chunks{id(9, 0): committed(1, 1), id(4, 0): committed(1, 1), id(5, 0): committed(1, 8)},
			want: RecoveryPlan{
				Steps: []RecoveryStep{
					remove(id(4, 0)), remove(id(9, 0)),
					send(id(1, 0)), send(id(2, 0)), send(id(3, 0)),
				},
				Skipped:   1,
				SendBytes: 7,
			},
		},
		{
			name:  "chunk id order is key order: inode first, then index",
			local: chunks{id(0x100, 0): committed(1, 1), id(2, 0x100): committed(1, 1), id(2, 3): committed(1, 1)},
			want: RecoveryPlan{
				Steps:     []RecoveryStep{send(id(2, 3)), send(id(2, 0x100)), send(id(0x100, 0))},
				SendBytes: 3,
			},
		},
	}
	for _, c := range cases {
		got := PlanRecovery(c.local, c.remote)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
		if held := len(c.local) + len(onlyIn(c.remote, c.local)); got.Chunks() != held {
			t.Errorf("%s: the plan covers %d chunks, the replicas hold %d", c.name, got.Chunks(), held)
		}
	}
}

// onlyIn lists the chunks of a that b lacks.
func onlyIn(a, b map[layout.ChunkID]ChunkState) []layout.ChunkID {
	var out []layout.ChunkID
	for id := range a {
		if _, ok := b[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}
