package cluster

import (
	"context"
	"net"
)

// Network lets a caller stand between the cluster's parties: every service
// and client dials through the Dialer of its party, and every listening
// address is announced with its owner. Tests use it to cut and heal links;
// nil dials plain TCP.
type Network interface {
	// Own records that party listens on addr.
	Own(addr, party string)
	// Dialer is the dial function of party.
	Dialer(party string) func(ctx context.Context, addr string) (net.Conn, error)
}
