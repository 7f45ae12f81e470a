package mgmtd

import (
	"errors"
	"log/slog"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures one cluster manager.
type Config struct {
	// ID names this mgmtd among its peers; it must be unique in the cluster.
	ID string
	// Addr is the address peers and clients reach this mgmtd at: what a
	// non-primary names in its NotPrimary answers.
	Addr string
	// KV is the store every mgmtd of the cluster shares.
	KV *kv.DB

	// HeartbeatTimeout is T: a storage node silent this long is declared
	// failed. Default 6 s.
	HeartbeatTimeout time.Duration
	// LeaseLength is how long a primary's lease lasts from its last renewal.
	// Every mgmtd renews or probes the lease every LeaseLength/3, and a
	// primary acts only while more than LeaseLength/3 is left, so a dead
	// primary is replaced within 4/3 LeaseLength of its last renewal.
	// Default T/4: a failover then takes at most T/3, so a storage service
	// that heartbeats every T/6 and stops serving after T/2 without mgmtd
	// reaches the new primary before it would fence itself.
	LeaseLength time.Duration
	// ScanInterval is how often the primary checks liveness and updates the
	// chains. Default 500 ms.
	ScanInterval time.Duration
	// Bootstrapping is how long a new primary declares nobody failed while it
	// hears from every node. Default T.
	Bootstrapping time.Duration

	// RPC configures the server (token, logger, limits).
	RPC    rpc.Options
	Logger *slog.Logger
	// Registerer, when set, receives the cluster manager's metrics
	// (flyfs_mgmtd_*, its KV transactions among them; docs/metrics.md),
	// labelled id=<ID>. The RPC server's metrics go to RPC.Registerer.
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() (Config, error) {
	if c.ID == "" {
		return c, errors.New("mgmtd: no ID")
	}
	if c.KV == nil {
		return c, errors.New("mgmtd: no KV store")
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = 6 * time.Second
	}
	if c.LeaseLength <= 0 {
		c.LeaseLength = c.HeartbeatTimeout / 4
	}
	if c.ScanInterval <= 0 {
		c.ScanInterval = 500 * time.Millisecond
	}
	if c.Bootstrapping <= 0 {
		c.Bootstrapping = c.HeartbeatTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.RPC.Logger == nil {
		c.RPC.Logger = c.Logger
	}
	return c, nil
}

// renewEvery is the period of the lease loop.
func (c Config) renewEvery() time.Duration { return c.LeaseLength / 3 }

// takeoverWait is how long a standby watches an expired lease before it
// takes it (takeover.go).
func (c Config) takeoverWait() time.Duration { return c.LeaseLength / 2 }

// leaseMargin is the lease time a primary must have left to act as primary.
func (c Config) leaseMargin() time.Duration { return c.LeaseLength / 3 }
