package main

import (
	"github.com/flyfs/flyfs/core/kv/kvopen"
	"github.com/spf13/pflag"
)

// addKVFlags registers the flags that select and configure a KV engine.
func addKVFlags(fs *pflag.FlagSet, c *kvopen.Config) {
	fs.StringVar(&c.Engine, "kv", "pebble", "metadata KV engine: pebble (embedded), mem, etcd, fdb")
	fs.BoolVar(&c.NoSync, "kv-no-sync", false, "pebble: acknowledge commits before the WAL fsync (faster; a machine crash may lose the last commits)")
	fs.StringSliceVar(&c.EtcdEndpoints, "etcd-endpoints", nil, "etcd: client URLs, comma-separated")
	fs.StringVar(&c.EtcdPrefix, "etcd-prefix", "/flyfs/", "etcd: key prefix, so several clusters can share one etcd")
	fs.StringVar(&c.FDBClusterFile, "fdb-cluster-file", "", "fdb: path of the FoundationDB cluster file (binary built with -tags fdb)")
}
