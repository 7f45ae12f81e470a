package memkv_test

import (
	"testing"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/kvtest"
	"github.com/flyfs/flyfs/core/kv/memkv"
)

func TestConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T, opts kv.Options) *kv.DB {
		db := memkv.Open(opts)
		t.Cleanup(func() { db.Close() })
		return db
	})
}
