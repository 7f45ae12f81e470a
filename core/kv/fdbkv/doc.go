// Package fdbkv is the KV engine on FoundationDB, the engine for large
// clusters. It needs libfdb_c and its headers, so it is built only with
// `-tags fdb`; without the tag, Available is false and Open says how to get it.
//
// FoundationDB does the conflict detection itself: a snapshot is an FDB
// transaction whose reads are snapshot reads at its read version; at commit the
// same transaction gets our read-conflict keys and ranges, the buffered writes
// and the versionstamped ops, and FDB's resolvers decide.
package fdbkv

import "time"

// Options configure the engine.
type Options struct {
	ClusterFile string        // path of fdb.cluster; "" uses FoundationDB's default
	Prefix      []byte        // every key is stored under it; default "flyfs/"
	Timeout     time.Duration // per transaction; default 10 s
}
