package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/clusterid"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/pebblekv"
	"github.com/flyfs/flyfs/core/observe"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/prometheus/client_golang/prometheus"
)

// Cluster is a running in-process cluster. Its methods are safe for
// concurrent use.
type Cluster struct {
	cfg    Config
	kv     *kv.DB
	metaKV *kv.DB
	ownKV  bool
	rpc    *rpc.Client // the cluster's own calls: chain creation, waits

	id     string // the cluster id, as the first mgmtd drew or found it
	fresh  bool
	mgmtds []*mgmtdRole
	nodes  []*storageRole
	metads []*metadRole

	fsOnce sync.Once
	fs     *client.FS // the front ends' shared client
	fsErr  error

	mu        sync.Mutex
	frontEnds []func() // stop functions, run newest first at Close
	closed    bool
}

// Start starts the cluster managers, creates the chains when the cluster has
// none, starts the storage nodes and waits until every chain can be read,
// then starts the metadata services and waits until mgmtd lists them all.
// On error everything started is stopped again.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: state directory: %w", err)
	}
	c := &Cluster{cfg: cfg, kv: cfg.KV}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if c.kv == nil {
		db, err := pebblekv.Open(filepath.Join(cfg.Dir, "meta"), pebblekv.Options{NoSync: cfg.NoSync, SyncWindow: cfg.SyncWindow})
		if err != nil {
			return nil, fmt.Errorf("cluster: metadata store: %w", err)
		}
		c.kv, c.ownKV = db, true
	}
	c.metaKV = cfg.MetaKV
	if c.metaKV == nil {
		c.metaKV = c.kv
	}
	if c.cfg.MasterKey == nil {
		if c.cfg.MasterKey, err = EnsureMasterKey(cfg.Dir); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	c.rpc = rpc.NewClient(c.RPCOptions("cluster"))
	if err := c.reserve(); err != nil {
		return nil, err
	}
	for i := range c.mgmtds {
		if err := c.StartMgmtd(i); err != nil {
			return nil, err
		}
	}
	c.id, c.fresh = c.Mgmtd(0).ClusterID()
	if err := c.ensureChains(ctx); err != nil {
		return nil, err
	}
	for i := range c.nodes {
		if err := c.StartNode(i); err != nil {
			return nil, err
		}
	}
	if err := c.WaitReadable(ctx); err != nil {
		return nil, err
	}
	if c.metaKV != c.kv {
		id, _ := c.ID()
		if err := clusterid.Adopt(ctx, c.metaKV, id); err != nil {
			return nil, fmt.Errorf("cluster: metad's store: %w", err)
		}
	}
	for i := range c.metads {
		if err := c.StartMetad(i); err != nil {
			return nil, err
		}
	}
	if err := c.WaitMetads(ctx, len(c.metads)); err != nil {
		return nil, err
	}
	return c, nil
}

// reserve names every role and gives it its address.
func (c *Cluster) reserve() error {
	addr := func(given []string, i int) (string, error) {
		if i < len(given) && given[i] != "" {
			return given[i], nil
		}
		return ReservePort()
	}
	for i := 0; i < c.cfg.Mgmtds; i++ {
		a, err := addr(c.cfg.MgmtdAddrs, i)
		if err != nil {
			return err
		}
		m := &mgmtdRole{ID: fmt.Sprintf("m%d", i+1), Addr: a}
		c.own(a, m.ID)
		c.mgmtds = append(c.mgmtds, m)
	}
	for i := 0; i < c.cfg.Nodes; i++ {
		a, err := addr(c.cfg.NodeAddrs, i)
		if err != nil {
			return err
		}
		n := &storageRole{Node: Node{ID: routing.NodeID(i + 1), Name: fmt.Sprintf("n%d", i+1), Addr: a,
			Dir: filepath.Join(c.cfg.Dir, fmt.Sprintf("disk%d", i))}}
		c.own(a, n.Name)
		c.nodes = append(c.nodes, n)
	}
	for i := 0; i < c.cfg.Metads; i++ {
		a, err := addr(c.cfg.MetadAddrs, i)
		if err != nil {
			return err
		}
		m := &metadRole{Name: fmt.Sprintf("md%d", i+1), Addr: a}
		c.own(a, m.Name)
		c.metads = append(c.metads, m)
	}
	return nil
}

func (c *Cluster) own(addr, party string) {
	if c.cfg.Network != nil {
		c.cfg.Network.Own(addr, party)
	}
}

// Registerer is where role's metrics go: Config.Metrics labelled
// role=<role>, or nil without metrics.
func (c *Cluster) Registerer(role string) prometheus.Registerer {
	if c.cfg.Metrics == nil {
		return nil
	}
	return observe.Role(c.cfg.Metrics, role)
}

// Gatherer gathers every role's metrics (Config.Metrics, where the front
// ends register too); nil without Config.Metrics.
func (c *Cluster) Gatherer() prometheus.Gatherer {
	if c.cfg.Metrics == nil {
		return nil
	}
	return c.cfg.Metrics
}

// roleRPC is RPCOptions for party with the RPC metrics of role.
func (c *Cluster) roleRPC(party, role string) rpc.Options {
	o := c.RPCOptions(party)
	o.Registerer = c.Registerer(role)
	return o
}

// RPCOptions are the RPC options of one party of the cluster: its token,
// its log, and its dialer on the Network.
func (c *Cluster) RPCOptions(party string) rpc.Options {
	l := c.cfg.RPCLimits
	o := rpc.Options{Token: c.cfg.Token, Logger: c.cfg.Logger, DialTimeout: 2 * time.Second,
		MaxConns: l.MaxConns, MaxInflightBytes: l.MaxInflightBytes, FrameTimeout: l.FrameTimeout, MinFrameRate: l.MinFrameRate, IdleTimeout: l.IdleTimeout}
	if c.cfg.Network != nil {
		o.Dial = c.cfg.Network.Dialer(party)
	}
	o.Local = c.local()
	return o
}

// local says whether calls within the cluster go in-process (Config.Local).
func (c *Cluster) local() bool { return c.cfg.Local && c.cfg.Network == nil }

// Config is the configuration the cluster runs with, defaults applied.
func (c *Cluster) Config() Config { return c.cfg }

// KV is the store mgmtd uses; MetaKV the one metad uses (the same unless
// Config.MetaKV was given).
func (c *Cluster) KV() *kv.DB     { return c.kv }
func (c *Cluster) MetaKV() *kv.DB { return c.metaKV }

// ID is the cluster's id as the first cluster manager holds it; fresh says
// this start drew it (a new cluster).
func (c *Cluster) ID() (id string, fresh bool) { return c.id, c.fresh }

// Mgmtd is a client of the cluster managers.
func (c *Cluster) MgmtdClient() *client.Mgmtd { return client.NewMgmtd(c.rpc, c.MgmtdAddrs()) }

// Routing fetches the newest routing from any cluster manager.
func (c *Cluster) Routing(ctx context.Context) (*routing.Info, error) {
	resp, err := c.MgmtdClient().GetRouting(ctx, 0)
	if err != nil {
		return nil, err
	}
	if resp.Info == nil {
		return &routing.Info{}, nil
	}
	return resp.Info, nil
}

// WaitReadable waits until every chain has a serving target whose node
// address routing knows: from then on reads and writes find a way.
func (c *Cluster) WaitReadable(ctx context.Context) error {
	return c.WaitRouting(ctx, "every chain serving", func(info *routing.Info) bool {
		if len(info.Chains) == 0 {
			return false
		}
		for _, ch := range info.Chains {
			r := ch.Readable()
			if len(r) == 0 {
				return false
			}
			if a, ok := info.Addr(r[0].Node); !ok || a == "" {
				return false
			}
		}
		return true
	})
}

// WaitRouting polls routing until cond holds; it gives up when ctx ends or,
// without a deadline on ctx, after 30 s.
func (c *Cluster) WaitRouting(ctx context.Context, what string, cond func(*routing.Info) bool) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	poll := min(c.cfg.HeartbeatTimeout/10, 100*time.Millisecond)
	var info *routing.Info
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		got, err := c.Routing(actx)
		cancel()
		if err == nil {
			info = got
			if cond(info) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s did not happen (%w); routing: %s", what, ctx.Err(), Describe(info))
		case <-time.After(poll):
		}
	}
}

// WaitMetads waits until mgmtd lists n live metadata services, so that
// clients dialed next discover all of them.
func (c *Cluster) WaitMetads(ctx context.Context, n int) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	m := c.MgmtdClient()
	for {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := m.Services(actx, mgmtdapi.KindMetad)
		acancel()
		alive := 0
		if err == nil {
			for _, s := range resp.Services {
				if s.Alive {
					alive++
				}
			}
		}
		if alive >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: only %d of %d metad registered with mgmtd (%v)", alive, n, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Dial returns a new client of the cluster dialing as party on the Network;
// metads, when given, bind it to those metadata services instead of the
// ones mgmtd lists. The caller closes it.
func (c *Cluster) Dial(ctx context.Context, party string, metads []string) (*client.FS, error) {
	cfg := client.Config{Mgmtd: c.MgmtdAddrs(), Token: c.cfg.Token, Logger: c.cfg.Logger, Metad: metads, Local: c.local(),
		InlineMax: c.inlineFileMax()}
	if cfg.InlineMax == 0 {
		cfg.InlineMax = -1 // metad keeps none: hold none
	}
	if party == "client" { // the front ends' shared client
		cfg.Registerer = c.Registerer("client")
	}
	if c.cfg.Network != nil {
		cfg.Dialer = c.cfg.Network.Dialer(party)
	}
	return client.Dial(ctx, cfg)
}

// FS is the client the front ends share, dialed on first use and closed at
// Close.
func (c *Cluster) FS(ctx context.Context) (*client.FS, error) {
	c.fsOnce.Do(func() {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		c.fs, c.fsErr = c.Dial(dctx, "client", nil)
		if c.fsErr != nil {
			c.fsErr = fmt.Errorf("cluster: connect the front ends: %w", c.fsErr)
		}
	})
	return c.fs, c.fsErr
}

// OnClose adds a stop function (a front end's), run at Close before any
// role stops, newest first.
func (c *Cluster) OnClose(stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frontEnds = append(c.frontEnds, stop)
}

// Close stops every role, front ends first, then the shared client, the
// metadata services, the storage nodes and the cluster managers, and closes
// the store the cluster opened.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	stops := c.frontEnds
	c.frontEnds = nil
	c.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	if c.fs != nil {
		c.fs.Close()
	}
	for i := range c.metads {
		c.StopMetad(i)
	}
	for i := range c.nodes {
		c.StopNode(i)
	}
	for i := range c.mgmtds {
		c.StopMgmtd(i)
	}
	if c.rpc != nil {
		c.rpc.Close()
	}
	if c.ownKV {
		return c.kv.Close()
	}
	return nil
}

// Describe prints chains and their target states, for messages.
func Describe(in *routing.Info) string {
	if in == nil {
		return "<none>"
	}
	s := fmt.Sprintf("v%d", in.Version)
	for id := routing.ChainID(1); int(id) <= len(in.Chains)+10; id++ {
		ch, ok := in.Chains[id]
		if !ok {
			continue
		}
		s += fmt.Sprintf(" | chain %d v%d:", id, ch.Version)
		for _, t := range ch.Targets {
			s += fmt.Sprintf(" %d@n%d:%v/%v", t.ID, t.Node, t.Public, t.Local)
		}
	}
	return s
}
