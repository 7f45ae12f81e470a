// Package durability carries in a context whether a change may be
// acknowledged before it is durable.
//
// A relaxed change is acknowledged once it is logged where a crash of the
// process cannot lose it, and made durable later: within the store's sync
// window, or when the caller asks (a mount's fsync(2) calls metad's Sync).
// A crash of the machine under the store may lose the relaxed changes of
// its last window; what survives is a prefix of the changes, each whole.
// That is the contract of a local file system, and what the FUSE mount
// asks for. Everything else (S3, the console, flyfs admin, every service's
// own work) is strict: durable when acknowledged, as S3 promises.
//
// The flag travels with RPC requests (core/rpc's FlagRelaxed) into the
// handler's context, where the KV layer reads it at commit (core/kv).
// Stores that sync or replicate every commit (etcd, FoundationDB) ignore
// it. Work that later steps outside the store depend on is Strict whatever
// its caller asked: inode id batches, GC claims, a size cut before the
// chunks past it are.
package durability

import "context"

type relaxedKey struct{}

// Relaxed returns a context under which changes may be relaxed.
func Relaxed(ctx context.Context) context.Context {
	if IsRelaxed(ctx) {
		return ctx
	}
	return context.WithValue(ctx, relaxedKey{}, true)
}

// Strict returns a context under which changes are durable when
// acknowledged, whatever ctx says.
func Strict(ctx context.Context) context.Context {
	if !IsRelaxed(ctx) {
		return ctx
	}
	return context.WithValue(ctx, relaxedKey{}, false)
}

// IsRelaxed reports whether changes made under ctx may be relaxed.
func IsRelaxed(ctx context.Context) bool {
	r, _ := ctx.Value(relaxedKey{}).(bool)
	return r
}
