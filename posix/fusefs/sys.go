package fusefs

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// mountDev is the st_dev of the mount's root, or 0.
func mountDev(dir string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return 0
	}
	return st.Dev
}

func devMajor(dev uint64) uint64 { return (dev>>8)&0xfff | (dev>>32)&^0xfff }
func devMinor(dev uint64) uint64 { return dev&0xff | (dev>>12)&^0xff }

// SetReadAhead raises the mount's read-ahead window: the kernel caps what
// FUSE negotiates at 128 KiB, and sequential reads of big files want more
// requests in flight than that.
func SetReadAhead(dir string, kb int) error {
	dev := mountDev(dir)
	if dev == 0 {
		return fmt.Errorf("stat %s failed", dir)
	}
	p := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", devMajor(dev), devMinor(dev))
	return os.WriteFile(p, []byte(fmt.Sprint(kb)), 0)
}

// abortConn aborts a FUSE connection by its device number: every request
// waiting on it fails, so a lazily unmounted mount ends its serving loop.
func abortConn(dev uint64) {
	if dev == 0 {
		return
	}
	os.WriteFile(fmt.Sprintf("/sys/fs/fuse/connections/%d/abort", devMinor(dev)), []byte("1"), 0)
}

var execLookPath = exec.LookPath

func runCmd(prog string, args ...string) error {
	out, err := exec.Command(prog, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", prog, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
