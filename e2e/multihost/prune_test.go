package multihost

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
)

// Leaving out pending writes nobody saw keeps the verdict: a linearizable
// history stays so, a stale read is still caught.
func TestPruneUnseenPending(t *testing.T) {
	w := func(v uint64, call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: regInput{write: true, value: v}, Call: call, Return: ret, Metadata: 0}
	}
	r := func(v uint64, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: 1, Input: regInput{}, Output: v, Call: call, Return: ret, Metadata: 0}
	}
	const pending = math.MaxInt64
	for _, tc := range []struct {
		name string
		h    []porcupine.Operation
		kept int
		ok   bool
	}{
		{"an unseen pending write goes", []porcupine.Operation{w(1, 0, 10), w(2, 20, pending), r(1, 30, 40)}, 2, true},
		{"a pending write a read saw stays", []porcupine.Operation{w(1, 0, 10), w(2, 20, pending), r(2, 30, 40)}, 3, true},
		{"a stale read is still caught", []porcupine.Operation{w(1, 0, 10), w(2, 20, 25), w(3, 26, pending), r(1, 30, 40)}, 3, false},
		{"an acknowledged write stays", []porcupine.Operation{w(1, 0, 10), w(2, 20, 25), r(2, 30, 40)}, 3, true},
	} {
		got := pruneUnseenPending(tc.h)
		if len(got) != tc.kept {
			t.Errorf("%s: kept %d of %d operations, want %d", tc.name, len(got), len(tc.h), tc.kept)
		}
		if ok := porcupine.CheckOperations(registerModel, got); ok != tc.ok {
			t.Errorf("%s: linearizable %v after pruning, want %v", tc.name, ok, tc.ok)
		}
	}
}
