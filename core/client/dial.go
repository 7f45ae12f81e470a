package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/flyfs/flyfs/core/api/mgmtdapi"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/prometheus/client_golang/prometheus"
)

// Config says how to reach a cluster.
type Config struct {
	Mgmtd []string // cluster manager addresses (required)
	Token string   // the cluster token
	// Metad overrides discovery: use these metad addresses instead of the
	// ones registered with mgmtd.
	Metad []string
	// InodeTTL is how long path lookups are cached (default DefaultInodeTTL;
	// negative: no cache).
	InodeTTL time.Duration
	// RetryFor bounds how long a chunk read or write keeps retrying through
	// failovers (default 30 s); MetaRetry the same for metadata calls
	// (default 10 s). A caller's deadline cuts either short.
	RetryFor, MetaRetry time.Duration
	Logger              *slog.Logger
	// Dialer, when set, makes the connections (tests cut links with it).
	Dialer func(ctx context.Context, addr string) (net.Conn, error)
	// Local lets the client call services of its own process in-process
	// (rpc Options.Local; they must have it too).
	Local bool
	// Registerer, when set, receives the client's metrics (flyfs_client_*,
	// and its RPC calls as flyfs_rpc_client_*; docs/metrics.md). Clients of
	// one process may share it: their figures add up.
	Registerer prometheus.Registerer
	// InlineMax is the largest file whose data a close sends to metad to
	// keep in the inode (inline.go; default DefaultInlineMax, negative:
	// none).
	InlineMax int
}

// Dial connects to a cluster: routing from mgmtd (kept current), metad
// addresses from mgmtd's service registry (refreshed), and this client's
// registration as alive, which keeps its write sessions from being reaped.
// Close stops all of it.
func Dial(ctx context.Context, cfg Config) (*FS, error) {
	if len(cfg.Mgmtd) == 0 {
		return nil, errors.New("client: no mgmtd address given")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = 30 * time.Second
	}
	rc := rpc.NewClient(rpc.Options{Token: cfg.Token, Logger: cfg.Logger, Dial: cfg.Dialer, Registerer: cfg.Registerer, Local: cfg.Local})
	src, err := NewMgmtdSource(ctx, cfg.Mgmtd, rc, time.Second)
	if err != nil {
		rc.Close()
		return nil, err
	}
	metads := cfg.Metad
	if len(metads) == 0 {
		if metads, err = waitForMetad(ctx, src.Mgmtd()); err != nil {
			src.Close()
			rc.Close()
			return nil, err
		}
	}
	fs := NewFS(src, rc, metads, NewChunkIO(src, rc, cfg.RetryFor))
	fs.mgmtd = src.Mgmtd()
	fs.metrics = newFSMetrics(cfg.Registerer, fs, fs.chunks)
	fs.setMetad(rotate(metads, fs.clientID))
	switch {
	case cfg.InodeTTL < 0:
		fs.SetInodeTTL(0)
	case cfg.InodeTTL > 0:
		fs.SetInodeTTL(cfg.InodeTTL)
	}
	if cfg.MetaRetry > 0 {
		fs.MetaRetry = cfg.MetaRetry
	}
	if cfg.InlineMax != 0 {
		fs.SetInlineMax(cfg.InlineMax)
	}
	bg, stop := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		src.Mgmtd().keepRegistered(bg, mgmtdapi.KindClient, strconv.FormatUint(fs.clientID, 16), "", fs.cacheReport, cfg.Logger)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		if len(cfg.Metad) == 0 {
			fs.followMetad(bg, src.Mgmtd())
		}
	}()
	fs.closers = append(fs.closers, func() { rc.Close() }, src.Close, func() { stop(); <-done; <-done }, fs.metrics.close)
	return fs, nil
}

// Mgmtd is the client of the cluster managers this FS was dialed through
// (nil for an FS over routing of its own).
func (fs *FS) Mgmtd() *Mgmtd { return fs.mgmtd }

// waitForMetad asks mgmtd for live metad until one is registered (a cluster
// that is starting up) or ctx ends (default bound 30 s).
func waitForMetad(ctx context.Context, m *Mgmtd) ([]string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	for {
		addrs, err := liveMetad(ctx, m)
		if err == nil && len(addrs) > 0 {
			return addrs, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New("none registered")
			}
			return nil, fmt.Errorf("client: find metad through mgmtd: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func liveMetad(ctx context.Context, m *Mgmtd) ([]string, error) {
	resp, err := m.Services(ctx, mgmtdapi.KindMetad)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, s := range resp.Services {
		if s.Alive && s.Addr != "" {
			addrs = append(addrs, s.Addr)
		}
	}
	// Sorted, so a refresh can tell a changed set from a reordered one
	// (callers rotate it per client to spread load).
	slices.Sort(addrs)
	return addrs, nil
}

// followMetad refreshes the metad list every two seconds, keeping the
// current order when the set is unchanged.
func (fs *FS) followMetad(ctx context.Context, m *Mgmtd) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		addrs, err := liveMetad(cctx, m)
		cancel()
		if err != nil || len(addrs) == 0 {
			continue // keep what we have: better a stale list than none
		}
		cur := fs.MetadAddrs()
		sorted := slices.Clone(cur)
		slices.Sort(sorted)
		if !slices.Equal(sorted, addrs) {
			fs.setMetad(rotate(addrs, fs.clientID))
		}
	}
}

// rotate starts the list at a client-specific position.
func rotate(addrs []string, seed uint64) []string {
	if len(addrs) < 2 {
		return addrs
	}
	k := int(seed % uint64(len(addrs)))
	return append(slices.Clone(addrs[k:]), addrs[:k]...)
}
