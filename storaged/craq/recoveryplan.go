package craq

import (
	"bytes"
	"slices"

	"github.com/flyfs/flyfs/core/layout"
)

// RecoveryStep is one transfer of a recovery: send a chunk whole, or remove it.
type RecoveryStep struct {
	Chunk  layout.ChunkID
	Action SyncAction // SyncSend or SyncRemove
}

// RecoveryPlan is what one recovery of a returning target transfers.
type RecoveryPlan struct {
	// Steps are the removals, then the sends, each in chunk id order.
	// Removals go first so that a target that left its chain with a full disk
	// gets the room back (chunks collected meanwhile) before it is sent
	// anything.
	Steps []RecoveryStep
	// Skipped counts the chunks that need no transfer.
	Skipped int
	// SendBytes is the content the sends carry, as the predecessor holds it now.
	SendBytes uint64
}

// Chunks is the number of chunks the plan covers, transferred or skipped.
func (p RecoveryPlan) Chunks() int { return len(p.Steps) + p.Skipped }

// PlanRecovery decides every chunk once by SyncDecision, comparing the
// predecessor's chunks (local) with the returning target's dump-chunkmeta
// (remote). A chunk absent from a map is absent from that replica.
func PlanRecovery(local, remote map[layout.ChunkID]ChunkState) RecoveryPlan {
	ids := make([]layout.ChunkID, 0, len(local)+len(remote))
	for id := range local {
		ids = append(ids, id)
	}
	for id := range remote {
		if _, ok := local[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b layout.ChunkID) int { return bytes.Compare(a[:], b[:]) })

	var plan RecoveryPlan
	var sends []RecoveryStep
	for _, id := range ids {
		l, onLocal := local[id]
		r, onRemote := remote[id]
		switch a := SyncDecision(present(l, onLocal), present(r, onRemote)); a {
		case SyncSend:
			sends = append(sends, RecoveryStep{Chunk: id, Action: a})
			plan.SendBytes += uint64(l.Len)
		case SyncRemove:
			plan.Steps = append(plan.Steps, RecoveryStep{Chunk: id, Action: a})
		default:
			plan.Skipped++
		}
	}
	plan.Steps = append(plan.Steps, sends...)
	return plan
}

// present is SyncDecision's view of a map lookup: nil for an absent chunk.
func present(s ChunkState, ok bool) *ChunkState {
	if !ok {
		return nil
	}
	return &s
}
