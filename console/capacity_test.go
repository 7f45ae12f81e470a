package console

import (
	"strings"
	"testing"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
)

const gib = 1 << 30

// Three disks on one file system count its size and free space once; one
// over 90 % used is a reason naming its disks and percentage; a disk that
// reports no file system (an older storaged) counts as its own.
func TestCapacityOf(t *testing.T) {
	shared := func(path string) mgmtdapi.DiskReport {
		return mgmtdapi.DiskReport{Path: path, UsedBytes: 10 * gib, FreeBytes: 5 * gib, CapacityBytes: 100 * gib, FS: "0123456789abcdef"}
	}
	nodes := []mgmtdapi.NodeStatus{
		{Node: 2, Disks: []mgmtdapi.DiskReport{shared("/srv/flyfs/disk1")}},
		{Node: 1, Disks: []mgmtdapi.DiskReport{shared("/srv/flyfs/disk0"),
			{Path: "/mnt/nvme1", UsedBytes: 1 * gib, FreeBytes: 150 * gib, CapacityBytes: 200 * gib, FS: "fedcba9876543210"}}},
		{Node: 3, Disks: []mgmtdapi.DiskReport{shared("/srv/flyfs/disk2")}},
	}
	c, reasons := capacityOf(nodes)
	if c.Disks != 4 || c.FileSystems != 2 || c.TotalBytes != 300*gib || c.FreeBytes != 155*gib || c.FSUsedBytes != 145*gib ||
		c.UsedBytes != 31*gib || !c.TotalKnown || !c.FreeKnown || c.UsedPercent == nil || *c.UsedPercent < 48.3 || *c.UsedPercent > 48.4 {
		t.Errorf("capacity %+v (used %v %%), want 300 GiB, 155 GiB free on 2 file systems, 4 disks", c, c.UsedPercent)
	}
	if len(reasons) != 1 {
		t.Fatalf("reasons %q, want one for the shared file system", reasons)
	}
	want := "disks /srv/flyfs/disk0 of storage node 1, /srv/flyfs/disk1 of storage node 2 and /srv/flyfs/disk2 of storage node 3 share a file system that is 95.0 % full (5.0 GiB free of 100.0 GiB)"
	if !strings.HasPrefix(reasons[0], want) {
		t.Errorf("reason %q, want it to start %q", reasons[0], want)
	}

	// One disk over 90 %, one that reports no size, one that reports
	// neither size nor file system: each its own.
	nodes = []mgmtdapi.NodeStatus{{Node: 4, Disks: []mgmtdapi.DiskReport{
		{Path: "/d0", FreeBytes: 9 * gib, CapacityBytes: 100 * gib, FS: "a"},
		{Path: "/d1", FreeBytes: 10 * gib},
		{Path: "/d2", FreeBytes: 10 * gib},
	}}}
	c, reasons = capacityOf(nodes)
	if c.FileSystems != 3 || c.FreeBytes != 29*gib || c.TotalKnown || c.UsedPercent != nil || !c.FreeKnown {
		t.Errorf("capacity %+v, want 3 file systems, 29 GiB free, size unknown", c)
	}
	if len(reasons) != 1 || !strings.HasPrefix(reasons[0], "disk /d0 of storage node 4 is 91.0 % full (9.0 GiB free of 100.0 GiB)") {
		t.Errorf("reasons %q", reasons)
	}

	// A full disk says so itself: no second reason for its file system.
	nodes = []mgmtdapi.NodeStatus{{Node: 1, Disks: []mgmtdapi.DiskReport{{Path: "/d0", FreeBytes: 1 << 20, CapacityBytes: 100 * gib, FS: "a", Full: true}}}}
	if _, reasons = capacityOf(nodes); len(reasons) != 0 {
		t.Errorf("reasons for a full disk: %q", reasons)
	}
	if c, _ := capacityOf(nil); c.FreeKnown || c.TotalKnown || c.FileSystems != 0 {
		t.Errorf("no disks: %+v", c)
	}
}
