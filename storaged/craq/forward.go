package craq

// ForwardReplace reports whether a hop must forward the chunk's whole content
// instead of the client's update: when the successor is syncing (it may lack
// earlier versions), when the decision asks for it, or when an earlier attempt
// showed the successor lacks versions (AfterForward's SendWhole).
func ForwardReplace(successorSyncing bool, d Decision, successorLacksVersions bool) bool {
	return successorSyncing || d.ReplaceDownstream || successorLacksVersions
}

// ForwardOutcome is how one forward of an update to the successor ended.
type ForwardOutcome uint8

const (
	ForwardAcked       ForwardOutcome = iota + 1 // the successor committed the version
	ForwardAckedBehind                           // the successor answered success, committed below the version
	ForwardGap                                   // the successor refused the update as a gap: it lacks earlier versions
	ForwardUnreachable                           // the successor is down, busy or being replaced, or routing is moving
	ForwardRefused                               // the successor refused the update itself
)

func (o ForwardOutcome) String() string {
	switch o {
	case ForwardAcked:
		return "acked"
	case ForwardAckedBehind:
		return "acked-behind"
	case ForwardGap:
		return "gap"
	case ForwardUnreachable:
		return "unreachable"
	case ForwardRefused:
		return "refused"
	}
	return "outcome?"
}

// ForwardAction is what a hop does next about a forward.
type ForwardAction uint8

const (
	ForwardDone       ForwardAction = iota + 1 // the successor has the update: commit it here
	ForwardResendNow                           // send again at once
	ForwardRetryLater                          // wait for routing to change or the backoff to pass, then send to whichever successor routing names
	ForwardFail                                // fail the update with the successor's answer
	ForwardGiveUp                              // fail the update: the successor stayed unreachable until time was up
)

func (a ForwardAction) String() string {
	switch a {
	case ForwardDone:
		return "done"
	case ForwardResendNow:
		return "resend-now"
	case ForwardRetryLater:
		return "retry-later"
	case ForwardFail:
		return "fail"
	case ForwardGiveUp:
		return "give-up"
	}
	return "forward?"
}

// ForwardNext is the outcome of AfterForward.
type ForwardNext struct {
	Action ForwardAction
	// SendWhole: every later attempt carries the chunk's whole content, as the
	// successor lacks versions it needs.
	SendWhole bool
}

// AfterForward decides what a hop does after one forward to its successor
// ended with o. timeUp says the forward's deadline has passed or the hop is
// stopping.
func AfterForward(o ForwardOutcome, timeUp bool) ForwardNext {
	switch o {
	case ForwardAcked:
		return ForwardNext{Action: ForwardDone}
	case ForwardGap:
		// At once, even when time is up: the resend is a whole-chunk replace,
		// which no replica refuses as a gap, so this happens at most once per
		// forward.
		return ForwardNext{Action: ForwardResendNow, SendWhole: true}
	case ForwardRefused:
		return ForwardNext{Action: ForwardFail}
	}
	if timeUp {
		return ForwardNext{Action: ForwardGiveUp}
	}
	// An ack must mean the successor committed the version. One that did not
	// is answered with the whole chunk, after the backoff like any failed
	// forward: a successor that keeps doing so must not be flooded.
	return ForwardNext{Action: ForwardRetryLater, SendWhole: o == ForwardAckedBehind}
}
