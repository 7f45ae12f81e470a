package metad

import (
	"context"
	"fmt"
	"time"

	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/clusterid"
	"github.com/flyfs/flyfs/core/kv"
)

// checkCluster refuses a metad whose store is not the store of the cluster
// its mgmtd runs: it would hand out inode ids the cluster's metads already
// used, and split the namespace.
func checkCluster(ctx context.Context, db *kv.DB, m *client.Mgmtd) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	resp, err := m.GetPrimary(ctx)
	if err != nil {
		return fmt.Errorf("metad: ask mgmtd %v for the cluster id: %w", m.Addrs(), err)
	}
	want := resp.ClusterID
	if want == "" {
		return nil // a mgmtd that names no cluster: nothing to compare
	}
	got, err := clusterid.Read(ctx, db)
	if err != nil {
		return fmt.Errorf("metad: %w", err)
	}
	switch {
	case got == "":
		return fmt.Errorf("metad: its metadata store holds no cluster, but mgmtd %v runs cluster %s: it is not that cluster's store; give metad the store mgmtd uses (the same --kv and --etcd-endpoints or --fdb-cluster-file)", m.Addrs(), want)
	case got != want:
		return fmt.Errorf("metad: its metadata store belongs to cluster %s, but mgmtd %v runs cluster %s; give metad the store mgmtd uses (the same --kv and --etcd-endpoints or --fdb-cluster-file)", got, m.Addrs(), want)
	}
	return nil
}
