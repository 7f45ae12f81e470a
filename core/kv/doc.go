// Package kv is flyfs's transactional key-value interface, shaped like
// FoundationDB's, and the transaction layer that every engine shares.
//
// A transaction reads at one read version and buffers its writes. Reads see the
// transaction's own writes. Commit is serializable: it fails with ErrConflict if
// any key or range the transaction read (without the snapshot flag) or named with
// AddReadConflict/AddReadConflictRange was written by a transaction that committed
// after the read version. Snapshot reads add nothing to the conflict set; callers
// that walk a path with snapshot reads then add exactly the keys whose change must
// abort them.
//
// Engines implement the small Backend interface (a read view at a version, and an
// atomic commit with conflict detection); the buffering, read-your-writes merge,
// limits and retry loop live here once, so every engine behaves the same and one
// conformance suite (kvtest) checks them all. Engines: memkv (tests), pebblekv (the
// embedded default), etcdkv (multi-process clusters), fdbkv (build tag fdb).
package kv
