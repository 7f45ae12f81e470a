package pebblekv_test

import (
	"testing"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/kvtest"
	"github.com/flyfs/flyfs/core/kv/pebblekv"
)

func TestConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T, opts kv.Options) *kv.DB {
		db, err := pebblekv.Open(t.TempDir(), pebblekv.Options{KV: opts})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}
