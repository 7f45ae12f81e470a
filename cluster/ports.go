package cluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// ReservePort returns a free loopback address for a service that may be
// stopped and started again on it. It is drawn below the kernel's ephemeral
// range (32768 and up on Linux), because while the service is down any
// outgoing connection on the machine may be given an ephemeral port, and
// then the restart could not bind it.
//
// A port stays reserved until the process exits, by an flock on a file named
// after it: no other reservation, in this process or in another process
// reserving beside it, gets it meanwhile, even while its service is down.
func ReservePort() (string, error) {
	var err error
	for try := 0; try < 200; try++ {
		port := 20000 + rand.IntN(12000)
		if !lockPort(port) {
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		var l net.Listener
		if l, err = net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr, nil
		}
	}
	return "", fmt.Errorf("cluster: no free port below the ephemeral range: %w", err)
}

var portLocks struct {
	sync.Mutex
	held []*os.File // kept open: closing a file would release its lock
}

// lockPort takes the machine-wide reservation of port, or reports that
// someone holds it. Without a lock directory it reserves nothing extra.
func lockPort(port int) bool {
	dir := filepath.Join(os.TempDir(), "flyfs-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	portLocks.Lock()
	portLocks.held = append(portLocks.held, f)
	portLocks.Unlock()
	return true
}

// Listen binds addr, retrying for a few seconds: a port a stopped service
// held may linger briefly.
func Listen(addr string) (net.Listener, error) {
	var err error
	for try := 0; try < 150; try++ {
		var l net.Listener
		if l, err = net.Listen("tcp", addr); err == nil {
			return l, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("listen %s: %w", addr, err)
}
