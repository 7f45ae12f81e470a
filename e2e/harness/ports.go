package harness

import (
	"fmt"
	"math/rand/v2"
	"net"
)

// ReservePort returns a free loopback address for a service that will be
// killed and restarted on it. It is drawn below the kernel's ephemeral range
// (32768 and up on Linux), because while the service is down any outgoing
// connection on the machine may be given an ephemeral port, and then the
// restart could not bind it.
func ReservePort() (string, error) {
	var err error
	for try := 0; try < 200; try++ {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		var l net.Listener
		if l, err = net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr, nil
		}
	}
	return "", fmt.Errorf("harness: no free port below the ephemeral range: %w", err)
}
