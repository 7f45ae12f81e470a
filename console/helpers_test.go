package console

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/rpc"
)

// clock is a settable clock for session expiry.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// rig is a console over a cluster, served by httptest, with keys made.
type rig struct {
	t     testing.TB
	con   *Console
	srv   *httptest.Server
	admin KeyInfo
	user  KeyInfo // no admin rights
	clock *clock
	fs    *client.FS
}

type rigConfig struct {
	mgmtd []string
	rc    *rpc.Client
	fs    *client.FS
	clock bool // use a settable clock (the sampler then sees frozen time)
}

func newRig(t testing.TB, rc rigConfig) *rig {
	t.Helper()
	r := &rig{t: t, fs: rc.fs}
	r.admin = r.makeKey(access.Key{Description: "test admin", Root: true})
	r.user = r.makeKey(access.Key{Description: "data only", Buckets: map[string]access.Permission{"data": access.Read}})
	var err error
	cfg := Config{Mgmtd: rc.mgmtd, RPC: rc.rc, FS: rc.fs, SampleInterval: 250 * time.Millisecond,
		MaxPartBytes: 3 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if rc.clock {
		r.clock = &clock{t: time.Now()}
		cfg.Now = r.clock.Now
	}
	if r.con, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(r.con)
	t.Cleanup(func() {
		r.srv.Close()
		r.con.Close()
	})
	return r
}

// makeKey stores a key in the cluster and returns it as the API shows it,
// secret included.
func (r *rig) makeKey(k access.Key) KeyInfo {
	r.t.Helper()
	made, err := r.fs.Keys().Create(context.Background(), k)
	if err != nil {
		r.t.Fatal(err)
	}
	info := keyInfo(*made)
	info.Secret = made.Secret
	return info
}

// authenticates says whether a key pair signs in to the cluster.
func (r *rig) authenticates(ctx context.Context, accessKey, secret string) (*access.Key, error) {
	return r.fs.Keys().Authenticate(ctx, accessKey, secret)
}

// browser is an HTTP client with a cookie jar, like a browser tab.
type browser struct {
	t    testing.TB
	base string
	hc   *http.Client
	csrf string
}

func (r *rig) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: r.t, base: r.srv.URL, hc: &http.Client{Jar: jar, Timeout: 60 * time.Second}}
}

// do sends a request and decodes a JSON answer into out (if non-nil); it
// returns the status and the error code of an error answer.
func (b *browser) do(method, path string, body any, out any) (int, string) {
	b.t.Helper()
	var rd io.Reader
	ct := ""
	switch v := body.(type) {
	case nil:
	case []byte:
		rd, ct = bytes.NewReader(v), "application/octet-stream"
	case io.Reader:
		rd, ct = v, "application/octet-stream"
	default:
		buf, _ := json.Marshal(v)
		rd, ct = bytes.NewReader(buf), "application/json"
	}
	req, err := http.NewRequest(method, b.base+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if b.csrf != "" {
		req.Header.Set(csrfHeader, b.csrf)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		var e apiErr
		json.Unmarshal(data, &e)
		return resp.StatusCode, e.Code
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			b.t.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode, ""
}

// must is do that fails the test on an error answer.
func (b *browser) must(method, path string, body any, out any) {
	b.t.Helper()
	if st, code := b.do(method, path, body, out); st != http.StatusOK {
		b.t.Fatalf("%s %s: status %d code %q", method, path, st, code)
	}
}

func (b *browser) signIn(k KeyInfo) (int, string) {
	b.t.Helper()
	var s sessionResp
	st, code := b.do("POST", "/api/session", signInReq{AccessKey: k.AccessKey, SecretKey: k.Secret}, &s)
	if st == http.StatusOK {
		b.csrf = s.CSRFToken
	}
	return st, code
}
