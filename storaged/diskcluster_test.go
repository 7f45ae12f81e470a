package storaged

import (
	"strings"
	"testing"
)

func TestDiskClusterStamp(t *testing.T) {
	dir := t.TempDir()
	if err := checkDiskCluster(dir, "cluster-a"); err != nil {
		t.Fatalf("a new disk: %v", err)
	}
	if err := checkDiskCluster(dir, "cluster-a"); err != nil {
		t.Fatalf("the same cluster again: %v", err)
	}
	err := checkDiskCluster(dir, "cluster-b")
	if err == nil || !strings.Contains(err.Error(), "belongs to cluster cluster-a") || !strings.Contains(err.Error(), "--data") {
		t.Fatalf("another cluster's disk: %v", err)
	}
}
