package harness

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// Network sits under every connection the harness's services and clients dial,
// so a test can cut the link between two parties and heal it. A party is a name
// ("n1", "client"); listening addresses map to the party that owns them.
type Network struct {
	mu     sync.Mutex
	owners map[string]string        // listen address -> party
	cut    map[[2]string]bool       // unordered pair of parties
	conns  map[[2]string][]net.Conn // live connections by (dialer, owner)
	delay  map[[2]string]time.Duration
}

// NewNetwork returns a network with every link up.
func NewNetwork() *Network {
	return &Network{owners: map[string]string{}, cut: map[[2]string]bool{}, conns: map[[2]string][]net.Conn{}}
}

// Own records that party listens on addr.
func (n *Network) Own(addr, party string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.owners[addr] = party
}

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// Cut breaks the link between a and b: open connections between them are
// closed and new ones are refused, in both directions.
func (n *Network) Cut(a, b string) {
	n.mu.Lock()
	n.cut[pair(a, b)] = true
	var doomed []net.Conn
	for k, cs := range n.conns {
		if pair(k[0], k[1]) == pair(a, b) {
			doomed = append(doomed, cs...)
			delete(n.conns, k)
		}
	}
	n.mu.Unlock()
	for _, c := range doomed {
		c.Close()
	}
}

// Heal restores the link between a and b.
func (n *Network) Heal(a, b string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.cut, pair(a, b))
}

// Dialer returns the dial function for party from.
func (n *Network) Dialer(from string) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		n.mu.Lock()
		to := n.owners[addr]
		cut := n.cut[pair(from, to)]
		n.mu.Unlock()
		if cut {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("harness: link %s-%s is cut: %w", from, to, syscall.ECONNREFUSED)}
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.cut[pair(from, to)] { // cut while dialing
			c.Close()
			return nil, fmt.Errorf("harness: link %s-%s is cut", from, to)
		}
		k := [2]string{from, to}
		if n.delay[pair(from, to)] > 0 {
			c = &delayedConn{Conn: c, n: n, link: pair(from, to)}
		}
		n.conns[k] = append(n.conns[k], c)
		return c, nil
	}
}

// Delay makes the link between a and b slow: every write the dialing side
// makes on a connection between them waits d first (writes on one connection
// queue behind each other, as on a congested link). Open connections between
// them are closed (as by a cut that heals at once) so that their
// replacements carry the delay; d = 0 takes it away again.
func (n *Network) Delay(a, b string, d time.Duration) {
	n.mu.Lock()
	if n.delay == nil {
		n.delay = map[[2]string]time.Duration{}
	}
	_, had := n.delay[pair(a, b)]
	if d > 0 {
		n.delay[pair(a, b)] = d
	} else {
		delete(n.delay, pair(a, b))
	}
	var doomed []net.Conn
	if d > 0 && !had { // connections made before have no delay hook
		for k, cs := range n.conns {
			if pair(k[0], k[1]) == pair(a, b) {
				doomed = append(doomed, cs...)
				delete(n.conns, k)
			}
		}
	}
	n.mu.Unlock()
	for _, c := range doomed {
		c.Close()
	}
}

func (n *Network) delayOf(link [2]string) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.delay[link]
}

// delayedConn holds each write back by its link's current delay.
type delayedConn struct {
	net.Conn
	n    *Network
	link [2]string
	wmu  sync.Mutex
}

func (c *delayedConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if d := c.n.delayOf(c.link); d > 0 {
		time.Sleep(d)
	}
	return c.Conn.Write(p)
}
