package routing

// UpdateChain computes a chain's next target states and order from the
// targets' reported local states: the rule the primary mgmtd applies to every
// chain on every scan. It is the design's 18-row table made exact:
//
//   - a serving target that is up (up-to-date or online) stays serving; a failed
//     one becomes lastsrv if no target of the chain is serving any more (it was
//     the last one, and the chain freezes until exactly that replica returns),
//     otherwise offline;
//   - a lastsrv target that is up serves again when nothing else serves; it goes
//     offline as soon as anything else serves, and otherwise stays lastsrv;
//   - a syncing target that reports up-to-date becomes serving; an online one
//     keeps syncing while a serving predecessor exists, else waits; a failed one
//     goes offline;
//   - a waiting or offline target that is online starts syncing when a serving
//     target exists and no other target of the chain is syncing (at most one
//     syncing target per chain); otherwise an up target waits and a failed one
//     is offline;
//
// then orders the chain serving, lastsrv, syncing, waiting, offline (stable
// within each group: a failed target moves to the tail, the head is the first
// serving target) and bumps the version if anything changed. local returns a
// target's reported state (LocalOffline when it has not reported).
func UpdateChain(c *Chain, local func(TargetID) LocalState) (*Chain, bool) {
	up := func(t Target) bool { l := local(t.ID); return l == UpToDate || l == Online }
	next := make([]PublicState, len(c.Targets))
	serving, lastsrv, syncing := 0, false, false

	// 1. Old serving targets.
	for i, t := range c.Targets {
		if t.Public == Serving && up(t) {
			next[i] = Serving
			serving++
		}
	}
	for i, t := range c.Targets {
		if t.Public != Serving || up(t) {
			continue
		}
		if serving == 0 && !lastsrv && !anyUpLastSrv(c, up) {
			next[i], lastsrv = LastSrv, true
		} else {
			next[i] = Offline
		}
	}
	// 2. Old lastsrv targets.
	for i, t := range c.Targets {
		if t.Public != LastSrv {
			continue
		}
		switch {
		case serving > 0:
			next[i] = Offline
		case up(t):
			next[i] = Serving
			serving++
		default:
			next[i], lastsrv = LastSrv, true
		}
	}
	// 3. Old syncing targets.
	for i, t := range c.Targets {
		if t.Public != Syncing {
			continue
		}
		switch l := local(t.ID); {
		case l == UpToDate && serving > 0:
			next[i] = Serving
		case l == UpToDate || l == Online:
			if serving > 0 && !syncing {
				next[i], syncing = Syncing, true
			} else {
				next[i] = Waiting
			}
		default:
			next[i] = Offline
		}
	}
	// 4. Old waiting and offline targets.
	for i, t := range c.Targets {
		if t.Public != Waiting && t.Public != Offline && t.Public != 0 {
			continue
		}
		switch l := local(t.ID); {
		case l == Online && serving > 0 && !syncing:
			next[i], syncing = Syncing, true
		case l == UpToDate || l == Online:
			next[i] = Waiting
		default:
			next[i] = Offline
		}
	}
	// 5. Anything serving unfreezes the chain.
	if serving > 0 {
		for i := range next {
			if next[i] == LastSrv {
				next[i] = Offline
			}
		}
	}
	// 6. Order, and detect change.
	out := &Chain{ID: c.ID, Version: c.Version, Targets: make([]Target, 0, len(c.Targets))}
	for _, group := range []PublicState{Serving, LastSrv, Syncing, Waiting, Offline} {
		for i, t := range c.Targets {
			if next[i] == group {
				t.Public, t.Local = group, local(t.ID)
				out.Targets = append(out.Targets, t)
			}
		}
	}
	changed := false
	for i, t := range out.Targets {
		if t.ID != c.Targets[i].ID || t.Public != c.Targets[i].Public {
			changed = true
		}
	}
	if changed {
		out.Version++
	}
	return out, changed
}

// anyUpLastSrv reports whether an existing lastsrv target is back, in which
// case it, not a newly failed serving target, is the chain's last server.
func anyUpLastSrv(c *Chain, up func(Target) bool) bool {
	for _, t := range c.Targets {
		if t.Public == LastSrv && up(t) {
			return true
		}
	}
	return false
}
