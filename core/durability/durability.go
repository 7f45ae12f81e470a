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
// A relaxed change from a caller in the same process (flyfs server's own
// mount, through core/rpc's in-process path) is acknowledged once applied,
// its log record written right after: a crash of the process, which ends
// that caller with it, may lose the last few of them, as a crash of the
// machine may lose a window's. Sync and the window cover them as any other.
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

type inProcessKey struct{}

// InProcess returns a context whose relaxed changes come from a caller in
// this process (see above).
func InProcess(ctx context.Context) context.Context {
	return context.WithValue(ctx, inProcessKey{}, true)
}

// IsInProcess reports whether ctx's relaxed changes come from a caller in
// this process.
func IsInProcess(ctx context.Context) bool {
	r, _ := ctx.Value(inProcessKey{}).(bool)
	return r && IsRelaxed(ctx)
}

// IsRelaxed reports whether changes made under ctx may be relaxed.
func IsRelaxed(ctx context.Context) bool {
	r, _ := ctx.Value(relaxedKey{}).(bool)
	return r
}
