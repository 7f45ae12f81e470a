package craq

import "testing"

func TestForwardReplace(t *testing.T) {
	plain := Decision{Action: Apply, Version: 3}
	leftover := Decision{Action: Apply, Version: 3, ReplaceDownstream: true}
	cases := []struct {
		name                 string
		syncing              bool
		d                    Decision
		lacksVersions, whole bool
	}{
		{"a plain update to a serving successor is forwarded as is", false, plain, false, false},
		{"a syncing successor gets the whole chunk", true, plain, false, true},
		{"a leftover pending version goes down as the whole chunk", false, leftover, false, true},
		{"a successor that lacks versions gets the whole chunk", false, plain, true, true},
	}
	for _, c := range cases {
		if got := ForwardReplace(c.syncing, c.d, c.lacksVersions); got != c.whole {
			t.Errorf("%s: %v, want %v", c.name, got, c.whole)
		}
	}
}

func TestAfterForward(t *testing.T) {
	cases := []struct {
		name   string
		o      ForwardOutcome
		timeUp bool
		want   ForwardNext
	}{
		{"acked: done", ForwardAcked, false, ForwardNext{Action: ForwardDone}},
		{"acked just as time is up: done", ForwardAcked, true, ForwardNext{Action: ForwardDone}},
		{"gap: resend the whole chunk at once", ForwardGap, false, ForwardNext{Action: ForwardResendNow, SendWhole: true}},
		{"gap when time is up: still resend the whole chunk at once", ForwardGap, true, ForwardNext{Action: ForwardResendNow, SendWhole: true}},
		{"acked behind the version: the whole chunk, after the backoff", ForwardAckedBehind, false, ForwardNext{Action: ForwardRetryLater, SendWhole: true}},
		{"acked behind the version when time is up: give up", ForwardAckedBehind, true, ForwardNext{Action: ForwardGiveUp}},
		{"unreachable: retry after the backoff, towards whichever successor routing names", ForwardUnreachable, false, ForwardNext{Action: ForwardRetryLater}},
		{"unreachable when time is up: give up", ForwardUnreachable, true, ForwardNext{Action: ForwardGiveUp}},
		{"refused: fail with the successor's answer", ForwardRefused, false, ForwardNext{Action: ForwardFail}},
		{"refused when time is up: fail with the successor's answer", ForwardRefused, true, ForwardNext{Action: ForwardFail}},
	}
	for _, c := range cases {
		if got := AfterForward(c.o, c.timeUp); got != c.want {
			t.Errorf("%s: %v (whole %v), want %v (whole %v)", c.name, got.Action, got.SendWhole, c.want.Action, c.want.SendWhole)
		}
	}
}
