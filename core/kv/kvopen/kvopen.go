// Package kvopen opens the KV engine a configuration names, so every service
// selects its engine the same way (--kv mem|pebble|etcd|fdb).
package kvopen

import (
	"context"
	"fmt"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/etcdkv"
	"github.com/flyfs/flyfs/core/kv/fdbkv"
	"github.com/flyfs/flyfs/core/kv/memkv"
	"github.com/flyfs/flyfs/core/kv/pebblekv"
)

// Engines lists the engine names Open accepts.
var Engines = []string{"pebble", "mem", "etcd", "fdb"}

// Config names an engine and its settings.
type Config struct {
	Engine string // pebble (default), mem, etcd, fdb
	Dir    string // pebble: where its files live
	NoSync bool   // pebble: acknowledge commits before the WAL fsync
	// SyncWindow (pebble): relaxed commits (durability.Relaxed) are acknowledged
	// before the WAL fsync and made durable within it; 0: at once.
	SyncWindow     time.Duration
	EtcdEndpoints  []string // etcd
	EtcdPrefix     string   // etcd: key prefix, so clusters can share an etcd
	FDBClusterFile string   // fdb
	KV             kv.Options
}

// Open opens the configured engine.
func Open(ctx context.Context, c Config) (*kv.DB, error) {
	switch c.Engine {
	case "", "pebble":
		if c.Dir == "" {
			return nil, fmt.Errorf("kv engine pebble needs a directory")
		}
		return pebblekv.Open(c.Dir, pebblekv.Options{NoSync: c.NoSync, SyncWindow: c.SyncWindow, KV: c.KV})
	case "mem":
		return memkv.Open(c.KV), nil
	case "etcd":
		return etcdkv.Open(ctx, etcdkv.Options{Endpoints: c.EtcdEndpoints, Prefix: c.EtcdPrefix, KV: c.KV})
	case "fdb":
		return fdbkv.Open(ctx, fdbkv.Options{ClusterFile: c.FDBClusterFile}, c.KV)
	}
	return nil, fmt.Errorf("unknown kv engine %q (want one of %v)", c.Engine, Engines)
}
