package storaged

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// diskClusterFile names, in a disk directory, the cluster the disk's chunks
// belong to: stamped when the disk first joins a cluster, checked at every
// start after, so that another cluster's disk is never taken for this one's.
const diskClusterFile = "cluster-id"

// checkDiskCluster stamps dir with cluster if it carries no stamp and
// refuses a disk stamped with another cluster.
func checkDiskCluster(dir, cluster string) error {
	p := filepath.Join(dir, diskClusterFile)
	b, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(cluster+"\n"), 0o600)
	case err != nil:
		return err
	}
	if got := strings.TrimSpace(string(b)); got != cluster {
		return fmt.Errorf("disk %s belongs to cluster %s, but mgmtd runs cluster %s: give storaged this cluster's disks (--data), or remove the disk's contents to reuse it", dir, got, cluster)
	}
	return nil
}
