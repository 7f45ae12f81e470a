package kv

import "context"

// Relaxed commits: a transaction committed under a context that
// durability.Relaxed made may be acknowledged once the engine has logged
// it, before its log reaches the disk (package durability states the
// contract). Engines that sync or replicate every commit (etcd,
// FoundationDB, mem) treat it as any other. DB.Sync makes every commit
// acknowledged before it durable, and a durable commit does the same for
// every commit before it.

// Syncer is implemented by engines that acknowledge some commits before
// they are durable.
type Syncer interface {
	// Sync returns once every commit acknowledged before the call is durable.
	Sync(ctx context.Context) error
}

// Sync returns once every commit acknowledged before the call is durable.
// On engines whose every commit is durable it returns at once.
func (db *DB) Sync(ctx context.Context) error {
	if db.closed.Load() {
		return ErrClosed
	}
	if s, ok := db.be.(Syncer); ok {
		return s.Sync(ctx)
	}
	return nil
}
