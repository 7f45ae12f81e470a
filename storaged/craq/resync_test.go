package craq

import "testing"

func TestSyncDecision(t *testing.T) {
	st := func(chain, commit, update uint32) *ChunkState {
		return &ChunkState{ChainVer: chain, CommitVer: commit, UpdateVer: update}
	}
	cases := []struct {
		name          string
		local, remote *ChunkState
		want          SyncAction
	}{
		{"only on the predecessor: send", st(3, 5, 5), nil, SyncSend},
		{"only on the returning target: remove", nil, st(3, 5, 5), SyncRemove},
		{"higher chain version on the predecessor: send", st(4, 5, 5), st(3, 5, 5), SyncSend},
		{"committed differs from the target's pending: send", st(3, 7, 7), st(3, 5, 5), SyncSend},
		{"target behind with a stale pending: send", st(3, 7, 7), st(3, 5, 6), SyncSend},
		{"equal: skip", st(3, 5, 5), st(3, 5, 5), SyncSkip},
		{"the same update in flight on both: skip", st(3, 5, 6), st(3, 5, 6), SyncSkip},
		{"committed here, pending there at the same version: send", st(3, 6, 6), st(3, 5, 6), SyncSend},
		{"nothing anywhere: skip", nil, nil, SyncSkip},
	}
	for _, c := range cases {
		if got := SyncDecision(c.local, c.remote); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
