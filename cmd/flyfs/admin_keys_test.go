package main

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/e2e/harness"
)

// flyfs admin keys against a live cluster: create, list, revoke, refusals
// of bad input and of a wrong cluster token.
func TestAdminKeys(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{})
	keys := func(args ...string) (string, error) {
		return run(t, append([]string{"admin", "keys", "--mgmtd", strings.Join(c.MgmtdAddrs(), ","), "--token", c.Token}, args...)...)
	}
	out, err := keys("create", "--bucket", "data=readwrite", "--bucket", "*=read", "--uid", "1000", "--gid", "100", "--description", "ci")
	if err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`access key: (\S+)\nsecret key: (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("create printed %q", out)
	}
	k, err := c.FS().Keys().Get(t.Context(), m[1])
	if err != nil || k.Secret != m[2] || k.UID != 1000 || k.Buckets["data"] != access.ReadWrite || k.Buckets["*"] != access.Read {
		t.Fatalf("stored key: %v %+v", err, k)
	}
	out, err = keys("list")
	if err != nil || !strings.Contains(out, m[1]) || strings.Contains(out, m[2]) || !strings.Contains(out, "1000:100") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	// Rotate: a new secret printed once; the old one stops working
	// within a second on another client.
	out, err = keys("rotate", m[1])
	rm := regexp.MustCompile(`access key: (\S+)\nsecret key: (\S+)`).FindStringSubmatch(out)
	if err != nil || rm == nil || rm[1] != m[1] || rm[2] == m[2] {
		t.Fatalf("rotate: %v\n%s", err, out)
	}
	for deadline := time.Now().Add(3 * time.Second); ; {
		_, err := c.FS().Keys().Authenticate(t.Context(), m[1], m[2])
		if errors.Is(err, access.ErrNoSuchKey) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the old secret still authenticates 3 s after the rotation: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := c.FS().Keys().Authenticate(t.Context(), m[1], rm[2]); err != nil {
		t.Fatalf("the new secret: %v", err)
	}
	m[2] = rm[2]
	if out, err = keys("revoke", m[1]); err != nil {
		t.Fatalf("revoke: %v\n%s", err, out)
	}
	// Another client sees the revoke within a second (its cache's life).
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, err := c.FS().Keys().Authenticate(t.Context(), m[1], m[2])
		if errors.Is(err, access.ErrNoSuchKey) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the revoked key still authenticates after 3 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := keys("revoke", m[1]); err == nil || !strings.Contains(err.Error(), "no such access key") {
		t.Fatalf("revoking twice: %v", err)
	}
	if _, err := keys("create", "--bucket", "x=write"); err == nil {
		t.Fatal("a bad permission was accepted")
	}
	if out, err := keys("create", "--bucket", "Not_A_Bucket=read"); err == nil || !strings.Contains(err.Error(), "not a valid bucket name") {
		t.Fatalf("a bad bucket name: %v\n%s", err, out)
	}
	if _, err := run(t, "admin", "keys", "--mgmtd", strings.Join(c.MgmtdAddrs(), ","), "--token", "wrong", "--timeout", "2s", "list"); err == nil {
		t.Fatal("listed keys with a wrong cluster token")
	}
}

// flyfs admin nodes lists every role, the metadata services and clients
// among them.
func TestAdminNodesListsEveryRole(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{Metads: 2})
	c.FS() // a client registers as alive, in the background: wait for it
	var out string
	for deadline := time.Now().Add(10 * time.Second); ; {
		var err error
		out, err = run(t, "admin", "nodes", "--mgmtd", strings.Join(c.MgmtdAddrs(), ","), "--token", c.Token)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if strings.Contains(out, "client") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{"STORAGE NODES", "CLUSTER MANAGERS", "SERVICES", "metad", "md1", "md2", "client"} {
		if !strings.Contains(out, want) {
			t.Errorf("admin nodes lacks %q:\n%s", want, out)
		}
	}
}
