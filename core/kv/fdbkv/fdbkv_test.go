package fdbkv_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/fdbkv"
	"github.com/flyfs/flyfs/core/kv/kvtest"
)

// TestConformance runs the shared suite against FoundationDB when the binary
// was built with -tags fdb and FDB_CLUSTER_FILE names a cluster.
func TestConformance(t *testing.T) {
	cf := os.Getenv("FDB_CLUSTER_FILE")
	if !fdbkv.Available || cf == "" {
		t.Skip("fdb engine skipped: needs `go test -tags fdb` with libfdb_c installed and FDB_CLUSTER_FILE set")
	}
	run := time.Now().UnixNano()
	n := 0
	kvtest.Run(t, func(t *testing.T, opts kv.Options) *kv.DB {
		n++
		db, err := fdbkv.Open(context.Background(), fdbkv.Options{ClusterFile: cf, Prefix: []byte(fmt.Sprintf("flyfs-test/%d/%d/", run, n))}, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			db.Run(context.Background(), func(tx kv.Txn) error { tx.ClearRange([]byte{}, nil); return nil })
			db.Close()
		})
		return db
	})
}

func TestOpenWithoutTagSaysHow(t *testing.T) {
	if fdbkv.Available {
		t.Skip("built with fdb")
	}
	_, err := fdbkv.Open(context.Background(), fdbkv.Options{}, kv.Options{})
	if err == nil {
		t.Fatal("Open succeeded without FoundationDB support")
	}
}
