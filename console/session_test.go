package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/e2e/harness"
)

// A session ends with its key: a revoke made through another client of the
// cluster (flyfs admin keys, another console) ends it within about a second,
// and it can do nothing meanwhile once refused.
func TestSessionEndsWhenItsKeyIsRevokedElsewhere(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{})
	r := newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	second := r.makeKey(access.Key{Description: "second admin", Root: true})
	b := r.browser()
	if st, code := b.signIn(second); st != http.StatusOK {
		t.Fatalf("sign in: %d %s", st, code)
	}
	b.must("GET", "/api/keys", nil, nil)
	other, err := c.Dial("admin-cli")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Keys().Revoke(context.Background(), second.AccessKey); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		st, code := b.do("GET", "/api/keys", nil, nil)
		if st == http.StatusUnauthorized && code == "not_signed_in" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session of a key revoked elsewhere still answers %d after 3 s", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, _ := b.do("POST", "/api/keys", KeySpec{Description: "minted after the revoke", Admin: true}, nil); st != http.StatusUnauthorized {
		t.Fatalf("a revoked session minted a key: %d", st)
	}
}

// The last admin key cannot be revoked, so the cluster always keeps a way in.
func TestLastAdminKeyIsNotRevoked(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{})
	r := newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	b := r.browser()
	b.signIn(r.admin)
	if st, code := b.do("DELETE", "/api/keys/"+r.admin.AccessKey, nil, nil); st != http.StatusConflict || code != "last_admin_key" {
		t.Fatalf("revoking the only admin key: %d %q", st, code)
	}
	other := r.makeKey(access.Key{Description: "another admin", Root: true})
	b.must("DELETE", "/api/keys/"+other.AccessKey, nil, nil)
}

// Guessing from one address slows that address down, not the admin
// elsewhere; guessing one key from many addresses slows that key down, not
// other keys.
func TestSigninLimitsPerAddressAndKey(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{})
	r := newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	signIn := func(addr, key, secret string) int {
		req := httptest.NewRequest("POST", "/api/session", strings.NewReader(`{"accessKey":"`+key+`","secretKey":"`+secret+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = addr + ":40000"
		w := httptest.NewRecorder()
		r.con.ServeHTTP(w, req)
		return w.Code
	}
	limited := false
	for i := 0; i < 100 && !limited; i++ {
		limited = signIn("10.9.9.9", "FLYGUESS"+string(rune('A'+i%26)), "wrong-secret") == http.StatusTooManyRequests
	}
	if !limited {
		t.Fatal("100 failed sign-ins from one address were never slowed down")
	}
	if st := signIn("10.1.1.1", r.admin.AccessKey, r.admin.Secret); st != http.StatusOK {
		t.Fatalf("the admin from another address while a guesser is limited: %d", st)
	}
	limited = false
	for i := 0; i < 100 && !limited; i++ {
		limited = signIn("10.2.0."+string(rune('0'+i%10))+string(rune('0'+i/10)), r.user.AccessKey, "wrong-secret") == http.StatusTooManyRequests
	}
	if !limited {
		t.Fatal("100 failed sign-ins for one key from many addresses were never slowed down")
	}
	if st := signIn("10.2.0.1", r.admin.AccessKey, r.admin.Secret); st != http.StatusOK {
		t.Fatalf("another key while one key is limited: %d", st)
	}
}
