package mgmtd

import (
	"context"
	"fmt"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/google/uuid"
)

// clusterIDKey holds the cluster's id, drawn once by the first mgmtd that
// starts on a store. Every role of a cluster can compare it with what its
// own store or disk says, to refuse joining another cluster by mistake.
var clusterIDKey = append(kv.Tag("CONF/"), "cluster-id"...)

// ensureClusterID reads the store's cluster id, drawing one if there is
// none yet; fresh says this call drew it.
func ensureClusterID(ctx context.Context, db *kv.DB) (id string, fresh bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	drawn := uuid.NewString()
	err = db.Run(ctx, func(tx kv.Txn) error {
		v, found, err := tx.Get(ctx, clusterIDKey)
		if err != nil {
			return err
		}
		if found && string(v) != drawn { // a re-run after "maybe committed" finds its own id
			id, fresh = string(v), false
			return nil
		}
		id, fresh = drawn, true
		tx.Set(clusterIDKey, []byte(drawn))
		return nil
	})
	if err != nil {
		return "", false, fmt.Errorf("mgmtd: read the cluster id: %w", err)
	}
	return id, fresh, nil
}
