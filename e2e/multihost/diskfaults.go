package multihost

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// diskFaultsFile is the fault spec storage node i follows (--disk-faults-file).
func (c *Cluster) diskFaultsFile(i int) string {
	return filepath.Join(c.Dir, fmt.Sprintf("disk%d.faults", i+1))
}

// InjectDiskFaults makes storage node i's disk fail as spec says ("read
// EIO", one op per line; "" heals it), once the node has re-read its spec.
func (c *Cluster) InjectDiskFaults(i int, spec string) {
	c.t.Helper()
	tmp := c.diskFaultsFile(i) + ".new"
	if err := os.WriteFile(tmp, []byte(spec), 0o644); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(tmp, c.diskFaultsFile(i)); err != nil {
		c.t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the node re-reads it every 100 ms
}
