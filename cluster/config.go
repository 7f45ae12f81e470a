package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/prometheus/client_golang/prometheus"
)

// Config shapes an in-process cluster. Zero values take the defaults named
// beside each field.
type Config struct {
	// Dir holds every role's state (required); see the package doc.
	Dir string
	// KV is the store mgmtd and metad share; nil opens Pebble under
	// Dir/meta, closed again at Close. A given store is the caller's to
	// close.
	KV *kv.DB
	// MetaKV, when set, is metad's store instead of KV (tests give metad a
	// store with fault injection while mgmtd keeps a clean one).
	MetaKV *kv.DB
	// NoSync acknowledges writes before they reach the disk (storage, and
	// the Pebble store the cluster opens).
	NoSync bool
	// MasterKey seals access-key secrets in the store; nil keeps one in
	// Dir/master.key, drawn on the first start.
	MasterKey []byte
	// EncryptionKey (32 bytes), when set, encrypts the storage nodes'
	// chunk content at rest (storaged.Config.EncryptionKey).
	EncryptionKey []byte
	// SegmentSize is the checksum granularity of the storage nodes' new
	// disks (storaged.Config.SegmentSize; 0: the engine's default).
	SegmentSize int
	// SyncWindow bounds how long a mount's changes stay not durable
	// (package durability): the storage nodes' (storaged.Config.SyncWindow)
	// and, when the cluster opens it, the metadata store's
	// (pebblekv.Options.SyncWindow). 0: every change durable when
	// acknowledged.
	SyncWindow time.Duration
	// InlineMax is the storage nodes' (storaged.Config.InlineMax).
	InlineMax int
	// Token is the cluster token every peer presents; empty draws a random
	// one for this run, unless InsecureNoToken asks for none at all.
	Token           string
	InsecureNoToken bool

	// Mgmtds is the number of cluster managers (default 1), at MgmtdAddrs
	// (missing ones are reserved with ReservePort).
	Mgmtds     int
	MgmtdAddrs []string
	// HeartbeatTimeout is T (default 3 s); ScanInterval is how often the
	// primary scans the chains (default mgmtd's).
	HeartbeatTimeout time.Duration
	ScanInterval     time.Duration

	// Nodes is the number of storage nodes (default 1), at NodeAddrs.
	Nodes     int
	NodeAddrs []string
	// Chains (default 8) of Replicas targets each (default 1, at most
	// Nodes) are created when the cluster has none: on the first start.
	Chains, Replicas int
	// ForwardTimeout and ResyncBytesPerSec tune storaged (default: its own).
	ForwardTimeout    time.Duration
	ResyncBytesPerSec int64

	// Metads is the number of metadata services (0: none), at MetadAddrs.
	Metads     int
	MetadAddrs []string
	// ChunkSize and Stripe lay out new files where a directory does not say
	// (default: metad's, 1 MiB over up to 16 chains).
	ChunkSize, Stripe uint32
	// GCGrace is how long removed files keep their chunks (0: metad's
	// default of 5 minutes; negative: none). GCInterval and ReapEvery tune
	// metad's GC and session reaping (default: metad's).
	GCGrace time.Duration
	// TrashDays keeps removed files and trees in /.flyfs-trash that many
	// days (0: no trash).
	TrashDays int
	// InlineFileMax is the largest file metad keeps in its inode (0: the
	// client's DefaultInlineMax; negative: none).
	InlineFileMax int
	GCInterval    time.Duration
	ReapEvery     time.Duration

	// RPCLimits holds the bounds of every role's RPC server (MaxConns,
	// MaxInflightBytes, FrameTimeout, MinFrameRate, IdleTimeout; zero:
	// core/rpc's defaults); its other fields are unused.
	RPCLimits rpc.Options

	// Metrics, when set, receives every role's metrics, each family
	// labelled role=<mgmtd, metad, storaged, client> (docs/metrics.md);
	// serve Cluster.Gatherer, which adds what front ends keep elsewhere.
	Metrics *prometheus.Registry

	// Network, when set, carries every connection the roles dial.
	Network Network
	// Local has the roles and the clients of Dial and FS call each other
	// in-process, without sockets (rpc Options.Local), where a call would
	// otherwise go over loopback TCP to this very process. Without effect
	// with a Network, whose links must be real to be cut.
	Local bool
	// Logger receives every role's log (default: discarded).
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Dir == "" {
		return c, errors.New("cluster: no state directory (Config.Dir)")
	}
	if c.Mgmtds <= 0 {
		c.Mgmtds = 1
	}
	if c.Nodes <= 0 {
		c.Nodes = 1
	}
	if c.Chains <= 0 {
		c.Chains = 8
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.Replicas > c.Nodes {
		return c, errors.New("cluster: more replicas per chain than storage nodes")
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = 3 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.InsecureNoToken && c.Token != "":
		return c, errors.New("cluster: a token and InsecureNoToken")
	case !c.InsecureNoToken && c.Token == "":
		b := make([]byte, 32)
		rand.Read(b)
		c.Token = hex.EncodeToString(b)
	}
	return c, nil
}
