package rpc

import (
	"context"

	"github.com/flyfs/flyfs/core/durability"
)

// FlagRelaxed, in a request's header flags, carries durability.Relaxed:
// the caller accepts an acknowledgement of a change before the change is
// durable. A call made under a relaxed context carries it, and the
// handler's context is relaxed when its request did. A server that ignores
// the flag makes every change durable first, which is never wrong.
const FlagRelaxed uint16 = 1 << 0

func requestFlags(ctx context.Context) uint16 {
	if durability.IsRelaxed(ctx) {
		return FlagRelaxed
	}
	return 0
}
