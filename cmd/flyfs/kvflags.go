package main

import (
	"time"

	"github.com/flyfs/flyfs/core/kv/kvopen"
	"github.com/spf13/pflag"
)

// addKVFlags registers the flags that select and configure a KV engine.
func addKVFlags(fs *pflag.FlagSet, c *kvopen.Config) {
	fs.StringVar(&c.Engine, "kv", "pebble", "metadata KV engine: pebble (embedded), mem, etcd, fdb")
	fs.BoolVar(&c.NoSync, "kv-no-sync", false, "pebble: acknowledge every commit before the WAL fsync, sync only at fsync(2) (faster; a machine crash may lose the last commits)")
	fs.DurationVar(&c.SyncWindow, "kv-sync-window", 100*time.Millisecond, "pebble: namespace changes made through a mount are acknowledged before the WAL fsync and durable within this window or at fsync(2), as on a local file system; S3 and admin changes are durable when acknowledged (0: every change durable when acknowledged)")
	fs.StringSliceVar(&c.EtcdEndpoints, "etcd-endpoints", nil, "etcd: client URLs, comma-separated")
	fs.StringVar(&c.EtcdPrefix, "etcd-prefix", "/flyfs/", "etcd: key prefix, so several clusters can share one etcd")
	fs.StringVar(&c.FDBClusterFile, "fdb-cluster-file", "", "fdb: path of the FoundationDB cluster file (binary built with -tags fdb)")
}
