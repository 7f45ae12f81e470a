package main

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/gateway"
)

// flyfs admin keys against a live gateway: create, list, revoke, and the
// refusal without the root key.
func TestAdminKeys(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{})
	gw, err := gateway.New(gateway.Config{FS: c.FS(), KV: c.KV, RootAccessKey: "CMDROOT", RootSecretKey: "cmd-root-secret",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	srv := httptest.NewServer(gw)
	defer srv.Close()
	t.Setenv("FLYFS_ACCESS_KEY", "CMDROOT")
	t.Setenv("FLYFS_SECRET_KEY", "cmd-root-secret")
	keys := func(args ...string) (string, error) {
		return run(t, append([]string{"admin", "keys", "--endpoint", srv.URL}, args...)...)
	}
	out, err := keys("create", "--bucket", "data=readwrite", "--bucket", "*=read", "--uid", "1000", "--gid", "100", "--description", "ci")
	if err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`access key: (\S+)\nsecret key: (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("create printed %q", out)
	}
	k, err := gw.Keys().Get(t.Context(), m[1])
	if err != nil || k == nil || k.Secret != m[2] || k.UID != 1000 || k.Buckets["data"] != gateway.PermReadWrite || k.Buckets["*"] != gateway.PermRead {
		t.Fatalf("stored key: %v %+v", err, k)
	}
	out, err = keys("list")
	if err != nil || !strings.Contains(out, m[1]) || strings.Contains(out, m[2]) || !strings.Contains(out, "1000:100") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if out, err = keys("revoke", m[1]); err != nil {
		t.Fatalf("revoke: %v\n%s", err, out)
	}
	if k, _ := gw.Keys().Get(t.Context(), m[1]); k != nil {
		t.Fatal("revoked key still stored")
	}
	if _, err := keys("revoke", m[1]); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("revoking twice: %v", err)
	}
	if _, err := keys("create", "--bucket", "x=write"); err == nil {
		t.Fatal("a bad permission was accepted")
	}
	t.Setenv("FLYFS_SECRET_KEY", "wrong")
	if _, err := keys("list"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("wrong root secret: %v", err)
	}
}
