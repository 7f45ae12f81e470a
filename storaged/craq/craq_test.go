package craq

import "testing"

func TestAtHead(t *testing.T) {
	cases := []struct {
		name string
		l    Local
		want Decision
	}{
		{"new chunk", Local{}, Decision{Action: Apply, Version: 1}},
		{"committed", Local{Exists: true, CommitVer: 4, UpdateVer: 4}, Decision{Action: Apply, Version: 5}},
		{"leftover pending", Local{Exists: true, CommitVer: 4, UpdateVer: 5}, Decision{Action: Apply, Version: 6, ReplaceDownstream: true}},
	}
	for _, c := range cases {
		if got := AtHead(c.l); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestDownstream(t *testing.T) {
	committed := Local{Exists: true, CommitVer: 4, UpdateVer: 4}
	pending := Local{Exists: true, CommitVer: 4, UpdateVer: 5}
	cases := []struct {
		name    string
		l       Local
		v       uint32
		replace bool
		want    Action
	}{
		{"next version applies", committed, 5, false, Apply},
		{"committed version is done", committed, 4, false, AlreadyCommitted},
		{"older committed version is done", committed, 2, false, AlreadyCommitted},
		{"gap refused", committed, 6, false, Gap},
		{"pending version resent", pending, 5, false, AlreadyPending},
		{"after pending applies", pending, 6, false, Apply},
		{"gap past pending refused", pending, 7, false, Gap},
		{"new chunk at version 1", Local{}, 1, false, Apply},
		{"new chunk at a later version is a gap", Local{}, 3, false, Gap},
		{"replace over a gap applies", committed, 9, true, Apply},
		{"replace over pending applies", pending, 5, true, Apply},
		{"replace of a committed version is done", committed, 4, true, AlreadyCommitted},
		{"replace creates a missing chunk", Local{}, 7, true, Apply},
	}
	for _, c := range cases {
		got := Downstream(c.l, c.v, c.replace)
		if got.Action != c.want || got.Version != c.v {
			t.Errorf("%s: %v v%d, want %v v%d", c.name, got.Action, got.Version, c.want, c.v)
		}
	}
}

func TestShouldCommit(t *testing.T) {
	pending := Local{Exists: true, CommitVer: 4, UpdateVer: 5}
	if !ShouldCommit(pending, 5) {
		t.Error("the pending version must commit")
	}
	if ShouldCommit(pending, 4) || ShouldCommit(Local{Exists: true, CommitVer: 5, UpdateVer: 5}, 5) {
		t.Error("a repeated ack must not commit again")
	}
	if ShouldCommit(pending, 6) {
		t.Error("a version never applied must not commit")
	}
}

func TestRead(t *testing.T) {
	pending := Local{Exists: true, CommitVer: 1, UpdateVer: 2}
	cases := []struct {
		l       Local
		relaxed bool
		want    ReadAction
	}{
		{Local{}, false, ReadNotFound},
		{Local{Exists: true, CommitVer: 3, UpdateVer: 3}, false, ReadServe},
		{pending, false, ReadNotCommitted},
		{pending, true, ReadServe},
	}
	for i, c := range cases {
		if got := Read(c.l, c.relaxed); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}
