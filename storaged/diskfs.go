package storaged

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// diskSpace is what statfs says of the file system under a disk.
type diskSpace struct {
	// capacity is the file system's size less the blocks reserved for
	// root (f_blocks - (f_bfree - f_bavail)), which storaged does not
	// write: df's Used + Avail, so that capacity - free is df's Used and
	// 1 - free / capacity its Use%. free is f_bavail. In bytes.
	capacity, free uint64
	fs             string // the file system's identity (mgmtdapi.DiskReport.FS); "" unknown
}

// statDisk reads the file system under dir; ok is false when statfs fails.
func statDisk(dir string) (diskSpace, bool) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return diskSpace{}, false
	}
	bs := uint64(st.Frsize)
	if bs == 0 {
		bs = uint64(st.Bsize)
	}
	reserved := st.Bfree - min(st.Bavail, st.Bfree)
	return diskSpace{capacity: (st.Blocks - min(reserved, st.Blocks)) * bs, free: st.Bavail * bs, fs: fsIdentity(dir, &st)}, true
}

// fsIdentity names the file system st describes, the same for every
// directory on it and for every process on this machine (the nodes of
// flyfs server, containers sharing a host volume): its id within the
// running kernel, f_fsid (for overlayfs the upper file system's), else the
// device id, qualified by the kernel's boot id, which tells machines
// apart (XFS's f_fsid is its device number, the same on many hosts). It is
// hashed: an opaque name, nothing to read from it. "" when neither id is
// known.
func fsIdentity(dir string, st *unix.Statfs_t) string {
	var id string
	if v := st.Fsid.Val; v[0] != 0 || v[1] != 0 {
		id = fmt.Sprintf("fsid %08x%08x", uint32(v[0]), uint32(v[1]))
	} else {
		var s unix.Stat_t
		if unix.Stat(dir, &s) != nil {
			return ""
		}
		id = fmt.Sprintf("dev %d:%d", unix.Major(uint64(s.Dev)), unix.Minor(uint64(s.Dev)))
	}
	sum := sha256.Sum256([]byte(machineID() + "\x00" + id))
	return hex.EncodeToString(sum[:8])
}

// machineID tells this kernel from others': its boot id (shared by every
// container on the host, new at every boot), else the host name.
var machineID = sync.OnceValue(func() string {
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return "boot " + id
		}
	}
	h, _ := os.Hostname()
	return "host " + h
})
