package console

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/routing"
)

// diskAlmostFull is the share of a file system in use past which the
// overview names its disks as a cause of degraded health: the threshold of
// the Prometheus rule FlyfsDiskAlmostFull (deploy/flyfs-rules.yml), read
// the same way (1 - free / capacity).
const diskAlmostFull = 0.9

// fsDisk is one disk as the capacity figures see it.
type fsDisk struct {
	node routing.NodeID
	d    mgmtdapi.DiskReport
}

// fileSystem is the disks that share one file system (mgmtdapi.FSKey).
type fileSystem struct {
	disks          []fsDisk
	capacity, free uint64 // as its first disk reported them
}

// fileSystems groups the disks of nodes by the file system under them, in
// the order of their first disk (node id, then disk index).
func fileSystems(nodes []mgmtdapi.NodeStatus) (groups []*fileSystem, byKey map[string]*fileSystem) {
	byKey = map[string]*fileSystem{}
	sorted := slices.Clone(nodes)
	slices.SortStableFunc(sorted, func(a, b mgmtdapi.NodeStatus) int { return cmp.Compare(a.Node, b.Node) })
	for _, n := range sorted {
		for _, d := range n.Disks {
			k := mgmtdapi.FSKey(n.Node, d)
			g := byKey[k]
			if g == nil {
				g = &fileSystem{capacity: d.CapacityBytes, free: d.FreeBytes}
				byKey[k] = g
				groups = append(groups, g)
			}
			g.disks = append(g.disks, fsDisk{node: n.Node, d: d})
		}
	}
	return groups, byKey
}

// capacityOf is the cluster's capacity, each file system counted once
// however many disks share it (three disks on one volume are its free
// space once, not three times), and a reason for every file system over
// diskAlmostFull naming its disks and how full it is.
func capacityOf(nodes []mgmtdapi.NodeStatus) (capacityJSON, []string) {
	sp := mgmtdapi.SpaceOf(nodes)
	out := capacityJSON{FreeBytes: sp.FreeBytes, TotalBytes: sp.CapacityBytes, Disks: sp.Disks, FileSystems: sp.FileSystems,
		FreeKnown: sp.FreeKnown, TotalKnown: sp.CapacityKnown}
	for _, n := range nodes {
		for _, d := range n.Disks {
			out.UsedBytes += d.UsedBytes
		}
	}
	if sp.CapacityKnown {
		out.FSUsedBytes = sp.CapacityBytes - min(sp.FreeBytes, sp.CapacityBytes)
		pct := percent(out.FSUsedBytes, sp.CapacityBytes)
		out.UsedPercent = &pct
	}
	var reasons []string
	groups, _ := fileSystems(nodes)
	for _, g := range groups {
		if g.capacity == 0 {
			continue
		}
		used := g.capacity - min(g.free, g.capacity)
		if float64(used) <= diskAlmostFull*float64(g.capacity) {
			continue
		}
		allFull := true
		for _, fd := range g.disks {
			allFull = allFull && fd.d.Full
		}
		if allFull {
			continue // the disk-full reason says more
		}
		names := make([]string, len(g.disks))
		for i, fd := range g.disks {
			names[i] = fmt.Sprintf("%s of storage node %d", fd.d.Path, fd.node)
		}
		what := "disk " + names[0] + " is"
		if len(names) > 1 {
			what = "disks " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " share a file system that is"
		}
		reasons = append(reasons, fmt.Sprintf("%s %.1f %% full (%s free of %s): at 100 %% its chains refuse writes; remove files (then flyfs admin gc) or add disks",
			what, percent(used, g.capacity), fmtBytes(g.free), fmtBytes(g.capacity)))
	}
	return out, reasons
}

func percent(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

// fmtBytes writes n in binary units with one decimal, as the page does.
func fmtBytes(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
