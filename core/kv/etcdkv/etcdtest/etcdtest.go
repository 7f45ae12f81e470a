// Package etcdtest starts a real, single-member etcd server in-process (etcd's
// own embed package) for tests of the etcd engine.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Server is a running etcd.
type Server struct {
	Endpoint string
	etcd     *embed.Etcd
}

// Start starts etcd in dir on free loopback ports, with limits raised for
// flyfs's large transactions, and stops it when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := StartDir(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// StartDir starts etcd with its data in dir.
func StartDir(dir string) (*Server, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	client, peer, err := freePorts()
	if err != nil {
		return nil, err
	}
	cu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", client))
	pu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", peer))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.MaxTxnOps = 1 << 20
	cfg.MaxRequestBytes = 32 << 20
	cfg.QuotaBackendBytes = 2 << 30
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: start: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcdtest: etcd not ready after 30s")
	}
	return &Server{Endpoint: cu.String(), etcd: e}, nil
}

// Stop stops etcd.
func (s *Server) Stop() { s.etcd.Close() }

func freePorts() (int, int, error) {
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	return ports[0], ports[1], nil
}
