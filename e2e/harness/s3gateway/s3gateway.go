// Package s3gateway serves the real flyfs S3 gateway over an in-process
// cluster for tests outside the gateway package. It stands apart from
// harness because the gateway's own tests import harness.
package s3gateway

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/gateway"
)

// Start serves a gateway with root keys accessKey/secretKey over a fresh
// one-node cluster on a loopback listener, until the test ends, and
// returns its URL. It clears AWS_CA_BUNDLE, which breaks SDK clients
// talking plain HTTP.
func Start(t *testing.T, accessKey, secretKey string) string {
	t.Helper()
	t.Setenv("AWS_CA_BUNDLE", "")
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4}, ChunkSize: 1 << 20})
	gw, err := gateway.New(gateway.Config{FS: c.FS(), RootAccessKey: accessKey, RootSecretKey: secretKey,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gw}
	go srv.Serve(l)
	t.Cleanup(func() {
		srv.Close()
		gw.Close()
	})
	return "http://" + l.Addr().String()
}
