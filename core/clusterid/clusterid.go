// Package clusterid is the cluster's identity in its metadata store: a
// random id the first cluster manager draws, which every role compares with
// what it holds (its own store, its disks) before it joins, so that a role
// wired to the wrong store or another cluster's disk refuses to start
// instead of splitting the namespace.
package clusterid

import (
	"context"
	"fmt"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/google/uuid"
)

// key holds the id in the store.
var key = append(kv.Tag("CONF/"), "cluster-id"...)

// Ensure reads the store's cluster id, drawing one if there is none yet;
// fresh says this call drew it.
func Ensure(ctx context.Context, db *kv.DB) (id string, fresh bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	drawn := uuid.NewString()
	err = db.Run(ctx, func(tx kv.Txn) error {
		v, found, err := tx.Get(ctx, key)
		if err != nil {
			return err
		}
		if found && string(v) != drawn { // a re-run after "maybe committed" finds its own id
			id, fresh = string(v), false
			return nil
		}
		id, fresh = drawn, true
		tx.Set(key, []byte(drawn))
		return nil
	})
	if err != nil {
		return "", false, fmt.Errorf("read the cluster id: %w", err)
	}
	return id, fresh, nil
}

// Read returns the store's cluster id, or "" when it has none (a store no
// cluster manager ever ran on).
func Read(ctx context.Context, db *kv.DB) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var id string
	err := db.RunRead(ctx, func(tx kv.ReadTxn) error {
		v, found, err := tx.Get(ctx, key)
		if found {
			id = string(v)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("read the cluster id: %w", err)
	}
	return id, nil
}

// Adopt stamps id into a store that holds none yet (a second store the
// in-process cluster gives metad beside mgmtd's, for fault injection).
func Adopt(ctx context.Context, db *kv.DB, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := db.Run(ctx, func(tx kv.Txn) error {
		v, found, err := tx.Get(ctx, key)
		if err != nil {
			return err
		}
		if found && string(v) != id {
			return fmt.Errorf("the store belongs to cluster %s already, not %s", v, id)
		}
		tx.Set(key, []byte(id))
		return nil
	})
	if err != nil {
		return fmt.Errorf("adopt the cluster id: %w", err)
	}
	return nil
}
