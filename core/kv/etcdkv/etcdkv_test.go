package etcdkv_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/etcdkv"
	"github.com/flyfs/flyfs/core/kv/etcdkv/etcdtest"
	"github.com/flyfs/flyfs/core/kv/kvtest"
)

// TestConformance runs the shared suite against a real etcd server; each
// subtest gets its own key prefix on the one server.
func TestConformance(t *testing.T) {
	srv := etcdtest.Start(t)
	var n atomic.Int64
	kvtest.Run(t, func(t *testing.T, opts kv.Options) *kv.DB {
		db, err := etcdkv.Open(context.Background(), etcdkv.Options{
			Endpoints: []string{srv.Endpoint},
			Prefix:    fmt.Sprintf("/test%d/", n.Add(1)),
			KV:        opts,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestWrongEndpointFailsFast(t *testing.T) {
	_, err := etcdkv.Open(context.Background(), etcdkv.Options{Endpoints: []string{"http://127.0.0.1:1"}, DialTimeout: 500e6})
	if err == nil {
		t.Fatal("opened an engine on a dead endpoint")
	}
}
