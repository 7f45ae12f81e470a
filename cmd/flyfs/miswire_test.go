package main

import (
	"strings"
	"testing"
)

// A metad started on a store that is not its cluster's (here a fresh one of
// its own, as with a forgotten --kv etcd) refuses to start, naming the
// cluster mgmtd runs and the flags to fix, instead of registering and
// handing out inode ids the cluster's metads already used.
func TestMetadOnAnotherStoreRefusesToStart(t *testing.T) {
	addr := adminTestMgmtd(t)
	_, err := run(t, "metad", "--listen", "127.0.0.1:0", "--kv", "mem", "--mgmtd", addr, "--token", "sekrit")
	if err == nil || !strings.Contains(err.Error(), "holds no cluster") || !strings.Contains(err.Error(), "--kv") {
		t.Fatalf("metad on a store of its own: %v", err)
	}
}
