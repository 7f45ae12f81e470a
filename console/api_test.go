package console

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/e2e/harness"
)

func startFS(t *testing.T) *harness.FSCluster {
	return harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4}, ChunkSize: 1 << 20})
}

func fsRig(t *testing.T, c *harness.FSCluster, clock bool) *rig {
	return newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS(), clock: clock})
}

// TestRefusals: nothing works without a session of an admin key, and no
// state-changing call works without the session's CSRF token.
func TestRefusals(t *testing.T) {
	c := startFS(t)
	r := fsRig(t, c, true)
	b := r.browser()

	for _, call := range []struct{ method, path string }{
		{"GET", "/api/session"}, {"GET", "/api/overview"}, {"GET", "/api/chains"}, {"GET", "/api/fs/list?path=/"},
		{"GET", "/api/fs/download?path=/x"}, {"GET", "/api/keys"}, {"POST", "/api/fs/mkdir"}, {"POST", "/api/keys"},
		{"POST", "/api/targets/101/offline"}, {"DELETE", "/api/session"}, {"PUT", "/api/fs/uploads/abc?offset=0"},
	} {
		if st, code := b.do(call.method, call.path, map[string]string{}, nil); st != http.StatusUnauthorized || code != "not_signed_in" {
			t.Errorf("%s %s without a session: %d %q, want 401 not_signed_in", call.method, call.path, st, code)
		}
	}
	// The page shell itself is public, and carries a strict CSP.
	resp, err := http.Get(r.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("GET /: %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}

	if st, code := b.signIn(KeyInfo{AccessKey: r.admin.AccessKey, Secret: "wrong"}); st != http.StatusUnauthorized || code != "bad_credentials" {
		t.Errorf("wrong secret: %d %q", st, code)
	}
	if st, code := b.signIn(KeyInfo{AccessKey: "FKNOSUCHKEY", Secret: r.admin.Secret}); st != http.StatusUnauthorized || code != "bad_credentials" {
		t.Errorf("unknown key: %d %q", st, code)
	}
	if st, code := b.signIn(r.user); st != http.StatusForbidden || code != "forbidden" {
		t.Errorf("non-admin key: %d %q, want 403 forbidden", st, code)
	}
	if st, _ := b.do("GET", "/api/overview", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("after a refused sign-in: %d", st)
	}
	// A form post (what a cross-site page could send) is not a sign-in.
	resp, err = http.PostForm(r.srv.URL+"/api/session", url.Values{"accessKey": {r.admin.AccessKey}, "secretKey": {r.admin.Secret}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType || len(resp.Cookies()) != 0 {
		t.Errorf("form sign-in: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}

	if st, code := b.signIn(r.admin); st != 200 {
		t.Fatalf("admin sign-in: %d %q", st, code)
	}
	u, _ := url.Parse(r.srv.URL)
	cookies := b.hc.Jar.Cookies(u)
	if len(cookies) != 1 || cookies[0].Name != sessionCookie {
		t.Fatalf("cookies after sign-in: %v", cookies)
	}
	// The jar does not show flags; check them on a raw answer.
	raw, _ := http.Post(r.srv.URL+"/api/session", "application/json", strings.NewReader(fmt.Sprintf(`{"accessKey":%q,"secretKey":%q}`, r.admin.AccessKey, r.admin.Secret)))
	raw.Body.Close()
	if sc := raw.Header.Get("Set-Cookie"); !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") {
		t.Errorf("session cookie %q: want HttpOnly and SameSite=Strict", sc)
	}

	if st, _ := b.do("GET", "/api/overview", nil, nil); st != 200 {
		t.Errorf("overview signed in: %d", st)
	}
	good := b.csrf
	b.csrf = ""
	if st, code := b.do("POST", "/api/fs/mkdir", mkdirReq{Path: "/nocsrf"}, nil); st != http.StatusForbidden || code != "bad_csrf" {
		t.Errorf("mkdir without CSRF token: %d %q", st, code)
	}
	b.csrf = good[:len(good)-1] + "x"
	if st, code := b.do("POST", "/api/fs/mkdir", mkdirReq{Path: "/badcsrf"}, nil); st != http.StatusForbidden || code != "bad_csrf" {
		t.Errorf("mkdir with a wrong CSRF token: %d %q", st, code)
	}
	if st, code := b.do("POST", "/api/targets/101/offline", nil, nil); st != http.StatusForbidden || code != "bad_csrf" {
		t.Errorf("hold with a wrong CSRF token: %d %q", st, code)
	}
	if st, code := b.do("DELETE", "/api/keys/"+r.user.AccessKey, nil, nil); st != http.StatusForbidden || code != "bad_csrf" {
		t.Errorf("revoke with a wrong CSRF token: %d %q", st, code)
	}
	if _, err := r.fs.Stat(context.Background(), "/nocsrf"); err == nil {
		t.Error("a refused mkdir made the directory")
	}
	b.csrf = good
	b.must("POST", "/api/fs/mkdir", mkdirReq{Path: "/withcsrf"}, nil)

	// A token of another session does not do.
	other := r.browser()
	if st, _ := other.signIn(r.admin); st != 200 {
		t.Fatal("second sign-in")
	}
	other.csrf = good
	if st, code := other.do("POST", "/api/fs/mkdir", mkdirReq{Path: "/crossed"}, nil); st != http.StatusForbidden || code != "bad_csrf" {
		t.Errorf("another session's CSRF token: %d %q", st, code)
	}

	// Sign-out ends the session; sign-out itself needs the token.
	b.csrf = ""
	if st, _ := b.do("DELETE", "/api/session", nil, nil); st != http.StatusForbidden {
		t.Errorf("sign-out without token: %d", st)
	}
	b.csrf = good
	b.must("DELETE", "/api/session", nil, nil)
	if st, _ := b.do("GET", "/api/overview", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("after sign-out: %d", st)
	}

	// Sessions expire.
	b.signIn(r.admin)
	b.must("GET", "/api/session", nil, nil)
	r.clock.Add(9 * time.Hour)
	if st, code := b.do("GET", "/api/session", nil, nil); st != http.StatusUnauthorized || code != "not_signed_in" {
		t.Errorf("after the TTL: %d %q", st, code)
	}

	// Revoking a key ends its sessions.
	b.signIn(r.admin)
	var k KeyInfo
	b.must("POST", "/api/keys", KeySpec{Description: "second admin", Admin: true}, &k)
	b2 := r.browser()
	if st, _ := b2.signIn(k); st != 200 {
		t.Fatal("sign in with the new key")
	}
	b.must("DELETE", "/api/keys/"+k.AccessKey, nil, nil)
	if st, _ := b2.do("GET", "/api/overview", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("session of a revoked key: %d", st)
	}
	if st, _ := b2.signIn(k); st != http.StatusUnauthorized {
		t.Errorf("sign in with a revoked key: %d", st)
	}
}

func TestOverview(t *testing.T) {
	c := startFS(t)
	r := fsRig(t, c, false)
	b := r.browser()
	b.signIn(r.admin)
	ctx := context.Background()
	f, err := r.fs.Create(ctx, "/f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(bytes.Repeat([]byte("x"), 100_000), 0)
	f.Close()

	var o overviewJSON
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.must("GET", "/api/overview", nil, &o)
		if len(o.Rates) >= 2 && hasKind(o.Services, "metad") && o.Health.State == "healthy" || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if o.Health.State != "healthy" {
		t.Errorf("health %q %v, want healthy", o.Health.State, o.Health.Reasons)
	}
	if len(o.Mgmtds) != 1 || !o.Mgmtds[0].Primary {
		t.Errorf("mgmtds %+v", o.Mgmtds)
	}
	if len(o.Storage) != 1 || o.Storage[0].State != "alive" || o.Storage[0].LastHeartbeat == nil || len(o.Storage[0].Targets) != 4 {
		t.Errorf("storage %+v", o.Storage)
	}
	if !hasKind(o.Services, "metad") {
		t.Errorf("services %+v: no metad", o.Services)
	}
	if o.Chains.Total != 4 || o.Chains.Degraded != 0 {
		t.Errorf("chains %+v", o.Chains)
	}
	if o.Capacity.Disks != 1 || o.Capacity.UsedBytes < 100_000 {
		t.Errorf("capacity %+v: want the 100 kB file counted", o.Capacity)
	}
	// The file system's size and use, as storaged's statfs reports them.
	if c := o.Capacity; c.FileSystems != 1 || !c.TotalKnown || c.TotalBytes == 0 || c.FreeBytes > c.TotalBytes ||
		c.FSUsedBytes != c.TotalBytes-c.FreeBytes || c.UsedPercent == nil {
		t.Errorf("capacity %+v: want one file system with its size, free and used", c)
	}
	if len(o.Storage) == 1 {
		if d := o.Storage[0].Disks; len(d) != 1 || d[0].CapacityBytes == 0 || d[0].UsedPercent == nil || d[0].SharedFS != 1 {
			t.Errorf("disks %+v: want its file system's size and use", d)
		}
	}
	if o.Namespace == nil || o.Namespace.Inodes < 2 || o.Namespace.Bytes < 100_000 || o.GCQueue == nil {
		t.Errorf("namespace %+v gc %v", o.Namespace, o.GCQueue)
	}
	if len(o.Samples) < 2 || len(o.Rates) < 1 {
		t.Errorf("%d samples, %d rates: the sampler runs while someone is signed in", len(o.Samples), len(o.Rates))
	}
	// Reads show in the read-throughput series once a sample interval holds some.
	buf := make([]byte, 100_000)
	for deadline := time.Now().Add(15 * time.Second); ; {
		if f, err := r.fs.Open(ctx, "/f"); err == nil {
			f.ReadAt(buf, 0)
			f.Close()
		}
		b.must("GET", "/api/overview", nil, &o)
		seen := false
		for _, rt := range o.Rates {
			seen = seen || rt.ReadBytesPerS != nil && *rt.ReadBytesPerS > 0 && rt.ReadOpsPerS != nil && *rt.ReadOpsPerS > 0
		}
		if seen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no read throughput in the rates while reading: %+v", o.Rates)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("overview: %+v unreported %q", o.Health, o.Unreported)
}

func hasKind(ss []serviceJSON, kind string) bool {
	for _, s := range ss {
		if s.Kind == kind && s.Alive {
			return true
		}
	}
	return false
}

// TestChainsAndHold pages through chains and takes a target offline and
// back through the API, on a 3-replica cluster.
func TestChainsAndHold(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 3, Chains: 5, Replicas: 3}})
	r := newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	b := r.browser()
	b.signIn(r.admin)

	var page chainsJSON
	b.must("GET", "/api/chains?limit=2&offset=2", nil, &page)
	if page.Total != 5 || page.Matched != 5 || len(page.Chains) != 2 || page.Chains[0].ID != 3 || page.Chains[1].ID != 4 {
		t.Fatalf("page 2 of 2: %+v", page)
	}
	if len(page.Chains[0].Targets) != 3 || page.Chains[0].Targets[0].Public != "serving" {
		t.Errorf("chain 3: %+v", page.Chains[0])
	}
	for _, bad := range []string{"limit=0", "limit=5000", "offset=-1", "state=weird", "q=abc", "table=99"} {
		if st, _ := b.do("GET", "/api/chains?"+bad, nil, nil); st != http.StatusBadRequest && st != http.StatusNotFound {
			t.Errorf("chains?%s: %d", bad, st)
		}
	}
	b.must("GET", "/api/chains?q=302", nil, &page)
	if page.Matched != 1 || page.Chains[0].ID != 3 {
		t.Errorf("search for target 302: %+v", page.Chains)
	}

	if st, code := b.do("POST", "/api/targets/999/offline", nil, nil); st != http.StatusNotFound {
		t.Errorf("hold an unknown target: %d %q", st, code)
	}
	if st, _ := b.do("POST", "/api/targets/abc/offline", nil, nil); st != http.StatusBadRequest {
		t.Errorf("hold a bad id: %d", st)
	}
	b.must("POST", "/api/targets/402/offline", nil, nil)
	waitChains(t, b, func(p chainsJSON) bool {
		return p.Degraded == 1 && p.Chains[0].ID == 4 && p.Chains[0].State == "degraded" &&
			p.Chains[0].Targets[2].ID == 402 && p.Chains[0].Targets[2].Public == "offline"
	}, "chain 4 degraded and listed first, target 402 offline at its tail")
	var o overviewJSON
	b.must("GET", "/api/overview", nil, &o)
	if o.Health.State != "degraded" || o.Chains.Degraded != 1 {
		t.Errorf("overview with a held target: %+v %+v", o.Health, o.Chains)
	}
	if !slices.Contains(o.Health.Reasons, "1 target(s) offline: 402 (chain 4, node 2, held offline by console: "+r.admin.AccessKey+")") {
		t.Errorf("the overview does not name the offline target (the TargetOffline alert): %q", o.Health.Reasons)
	}
	found := false
	for _, n := range o.Storage {
		for _, tg := range n.Targets {
			if tg.Target == 402 {
				found = true
				if tg.Public != "offline" || !tg.Held || tg.HeldBy != "console: "+r.admin.AccessKey {
					t.Errorf("the overview's target 402: %+v, want public offline and held by the console's key", tg)
				}
			}
		}
	}
	if !found {
		t.Errorf("target 402 not in the overview's storage rows: %+v", o.Storage)
	}
	b.must("POST", "/api/targets/402/online", nil, nil)
	waitChains(t, b, func(p chainsJSON) bool { return p.Degraded == 0 }, "every chain serving again")
}

func waitChains(t *testing.T, b *browser, cond func(chainsJSON) bool, what string) chainsJSON {
	t.Helper()
	var p chainsJSON
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		b.must("GET", "/api/chains", nil, &p)
		if cond(p) {
			return p
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("never: %s; last %+v", what, p)
	return p
}

func TestNamespace(t *testing.T) {
	c := startFS(t)
	r := fsRig(t, c, false)
	b := r.browser()
	b.signIn(r.admin)
	ctx := context.Background()

	b.must("POST", "/api/fs/mkdir", mkdirReq{Path: "/a/b/c", Parents: true}, nil)
	if st, code := b.do("POST", "/api/fs/mkdir", mkdirReq{Path: "/a"}, nil); st != http.StatusConflict || code != "exists" {
		t.Errorf("mkdir of an existing directory: %d %q", st, code)
	}
	if st, code := b.do("POST", "/api/fs/mkdir", mkdirReq{Path: "/nope/x"}, nil); st != http.StatusNotFound {
		t.Errorf("mkdir under a missing parent: %d %q", st, code)
	}
	for _, p := range []string{"", "rel", "/a/../b", "/a/./b", "/a//b", "/a\x00b", "/" + strings.Repeat("n", 256)} {
		if st, code := b.do("POST", "/api/fs/mkdir", mkdirReq{Path: p}, nil); st != http.StatusBadRequest || code != "bad_path" {
			t.Errorf("mkdir %q: %d %q, want 400 bad_path", p, st, code)
		}
	}

	// Paging through a directory of 25 entries, 10 at a time.
	for i := 0; i < 25; i++ {
		if err := r.fs.Mkdir(ctx, fmt.Sprintf("/a/d%02d", i), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	after := ""
	for pages := 0; ; pages++ {
		var l listJSON
		b.must("GET", "/api/fs/list?"+url.Values{"path": {"/a"}, "after": {after}, "limit": {"10"}}.Encode(), nil, &l)
		for _, e := range l.Entries {
			names = append(names, e.Name)
		}
		if !l.More {
			break
		}
		after = l.Next
		if pages > 5 {
			t.Fatal("paging does not end")
		}
	}
	if len(names) != 26 || names[0] != "b" || names[1] != "d00" || names[25] != "d24" {
		t.Errorf("paged listing: %d names %v", len(names), names)
	}
	if st, code := b.do("GET", "/api/fs/list?path=/%FF", nil, nil); st != http.StatusBadRequest || code != "bad_path" {
		t.Errorf("list of a path that is not UTF-8: %d %q", st, code)
	}
	if st, code := b.do("GET", "/api/fs/list?path=/missing", nil, nil); st != http.StatusNotFound || code != "not_found" {
		t.Errorf("list of a missing directory: %d %q", st, code)
	}

	// Upload in parts (the rig allows 3 MiB a part): 7.5 MiB in 3 parts.
	data := make([]byte, 7<<20+512<<10)
	rand.Read(data)
	name := `<img src=x onerror=alert(1)>`
	dest := "/a/" + name
	var up uploadJSON
	b.must("POST", "/api/fs/uploads", uploadStartReq{Path: dest, Size: uint64(len(data))}, &up)
	part := int(up.PartSize)
	for off := 0; off < len(data); off += part {
		if off == part { // an early complete is refused while bytes are missing
			if st, code := b.do("POST", "/api/fs/uploads/"+up.ID+"/complete", nil, nil); st != http.StatusConflict || code != "incomplete" {
				t.Errorf("early complete: %d %q", st, code)
			}
		}
		end := min(off+part, len(data))
		b.must("PUT", fmt.Sprintf("/api/fs/uploads/%s?offset=%d", up.ID, off), data[off:end], nil)
	}
	// A part larger than the limit is refused.
	if st, code := b.do("PUT", "/api/fs/uploads/"+up.ID+"?offset=0", make([]byte, part+1), nil); st != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized part: %d %q", st, code)
	}
	// Not visible until complete.
	if _, err := r.fs.Stat(ctx, dest); err == nil {
		t.Error("the upload is visible before complete")
	}
	b.must("POST", "/api/fs/uploads/"+up.ID+"/complete", nil, nil)
	f, err := r.fs.Open(ctx, dest)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data)+10)
	n, _ := f.ReadAt(got, 0)
	f.Close()
	if n != len(data) || !bytes.Equal(got[:n], data) {
		for i := range data {
			if got[i] != data[i] {
				j := i
				for j < len(data) && got[j] != data[j] {
					j++
				}
				t.Logf("first difference at %d, differs until %d; got %x", i, j, got[i:i+16])
				break
			}
		}
		t.Fatalf("uploaded file read back through client.FS: %d bytes, equal %v", n, bytes.Equal(got[:n], data))
	}
	var l listJSON
	b.must("GET", "/api/fs/list?path=/a&limit=1000", nil, &l)
	found := false
	for _, e := range l.Entries {
		if strings.HasPrefix(e.Name, hiddenUpload) {
			t.Errorf("staging file listed: %q", e.Name)
		}
		if e.Name == name && e.Type == "file" && e.Size == uint64(len(data)) {
			found = true
		}
	}
	if !found {
		t.Errorf("the uploaded %q is not listed with its size", name)
	}

	// Details with an xattr and the layout.
	in, _ := r.fs.Stat(ctx, dest)
	if err := r.fs.Meta().SetXattr(ctx, in.ID, "user.owner-team", []byte("vision"), 0); err != nil {
		t.Fatal(err)
	}
	var st statJSON
	b.must("GET", "/api/fs/stat?"+url.Values{"path": {dest}}.Encode(), nil, &st)
	if st.Name != name || st.Size != uint64(len(data)) || st.UserMetadata["owner-team"] != "vision" || st.ETag == "" ||
		st.Layout == nil || st.Layout.ChunkSize != 1<<20 || len(st.Layout.Chains) != 4 {
		t.Errorf("stat: %+v layout %+v", st, st.Layout)
	}

	// Download, whole and a range.
	resp, err := b.hc.Get(r.srv.URL + "/api/fs/download?" + url.Values{"path": {dest}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(body, data) || resp.Header.Get("Content-Type") != "application/octet-stream" ||
		!strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Errorf("download: %d, %d bytes, headers %v", resp.StatusCode, len(body), resp.Header)
	}
	req, _ := http.NewRequest("GET", r.srv.URL+"/api/fs/download?"+url.Values{"path": {dest}}.Encode(), nil)
	req.Header.Set("Range", "bytes=1000-1999")
	resp, err = b.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, data[1000:2000]) {
		t.Errorf("range download: %d, %d bytes", resp.StatusCode, len(body))
	}

	// An aborted upload leaves nothing behind.
	b.must("POST", "/api/fs/uploads", uploadStartReq{Path: "/a/aborted", Size: 10}, &up)
	b.must("PUT", "/api/fs/uploads/"+up.ID+"?offset=0", []byte("12345"), nil)
	b.must("DELETE", "/api/fs/uploads/"+up.ID, nil, nil)
	ents, _ := r.fs.ReadDir(ctx, "/a")
	for _, e := range ents {
		if strings.HasPrefix(e.Name, hiddenUpload) || e.Name == "aborted" {
			t.Errorf("left after abort: %q", e.Name)
		}
	}
	if st, code := b.do("POST", "/api/fs/uploads", uploadStartReq{Path: "/a/b", Size: 1}, nil); st != http.StatusConflict || code != "is_a_directory" {
		t.Errorf("upload over a directory: %d %q", st, code)
	}

	// Rename a directory with everything in it.
	b.must("POST", "/api/fs/rename", renameReq{From: "/a", To: "/z"}, nil)
	if _, err := r.fs.Stat(ctx, "/z/b/c"); err != nil {
		t.Errorf("after rename /a → /z: %v", err)
	}
	if st, _ := b.do("POST", "/api/fs/rename", renameReq{From: "/z", To: "/z/b/inside"}, nil); st != http.StatusBadRequest {
		t.Errorf("move into itself: %d", st)
	}
	b.must("POST", "/api/fs/mkdir", mkdirReq{Path: "/y"}, nil)
	if st, code := b.do("POST", "/api/fs/rename", renameReq{From: "/y", To: "/z", NoReplace: true}, nil); st != http.StatusConflict {
		t.Errorf("rename onto an existing directory with noReplace: %d %q", st, code)
	}

	// Delete: a non-empty directory needs recursive.
	if st, code := b.do("POST", "/api/fs/delete", deleteReq{Path: "/z"}, nil); st != http.StatusConflict || code != "not_empty" {
		t.Errorf("delete of a non-empty directory without recursive: %d %q", st, code)
	}
	b.must("POST", "/api/fs/delete", deleteReq{Path: "/z", Recursive: true}, nil)
	if _, err := r.fs.Stat(ctx, "/z"); err == nil {
		t.Error("/z still exists after recursive delete")
	}
	if st, _ := b.do("POST", "/api/fs/delete", deleteReq{Path: "/", Recursive: true}, nil); st != http.StatusBadRequest {
		t.Errorf("delete /: %d", st)
	}
}

func TestKeysAPI(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{})
	r := newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	b := r.browser()
	b.signIn(r.admin)
	var k KeyInfo
	b.must("POST", "/api/keys", KeySpec{Description: "pipeline", Buckets: []BucketPerm{{Bucket: "datasets", Read: true}, {Bucket: "ckpt", Read: true, Write: true}}}, &k)
	if k.Secret == "" || k.AccessKey == "" || k.Admin {
		t.Fatalf("created %+v", k)
	}
	var list struct{ Keys []KeyInfo }
	b.must("GET", "/api/keys", nil, &list)
	if len(list.Keys) != 3 {
		t.Fatalf("%d keys", len(list.Keys))
	}
	for _, x := range list.Keys {
		if x.Secret != "" {
			t.Errorf("secret of %s listed", x.AccessKey)
		}
		if x.AccessKey == k.AccessKey && (len(x.Buckets) != 2 || x.Description != "pipeline") {
			t.Errorf("listed %+v", x)
		}
	}
	if p, err := r.authenticates(context.Background(), k.AccessKey, k.Secret); err != nil || p.Root {
		t.Errorf("the new key authenticates: %+v %v", p, err)
	}
	for _, bad := range [][]BucketPerm{{{Bucket: "A_B", Read: true}}, {{Bucket: "ok-name"}}, {{Bucket: "dup", Read: true}, {Bucket: "dup", Write: true}}, {{Bucket: "x", Read: true}}} {
		if st, _ := b.do("PUT", "/api/keys/"+k.AccessKey+"/buckets", bucketsReq{Buckets: bad}, nil); st != http.StatusBadRequest {
			t.Errorf("permissions %+v: %d, want 400", bad, st)
		}
	}
	b.must("PUT", "/api/keys/"+k.AccessKey+"/buckets", bucketsReq{Buckets: []BucketPerm{{Bucket: "*", Read: true}}}, nil)
	b.must("GET", "/api/keys", nil, &list)
	for _, x := range list.Keys {
		if x.AccessKey == k.AccessKey && (len(x.Buckets) != 1 || x.Buckets[0].Bucket != "*") {
			t.Errorf("after set: %+v", x.Buckets)
		}
	}
	if st, _ := b.do("PUT", "/api/keys/FKNONE/buckets", bucketsReq{}, nil); st != http.StatusNotFound {
		t.Errorf("permissions of a missing key: %d", st)
	}
	// Rotation: a new secret, answered once; the old one stops working.
	var rot KeyInfo
	b.must("POST", "/api/keys/"+k.AccessKey+"/rotate", nil, &rot)
	if rot.Secret == "" || rot.Secret == k.Secret || rot.AccessKey != k.AccessKey {
		t.Fatalf("rotated %+v", rot)
	}
	if _, err := r.authenticates(context.Background(), k.AccessKey, k.Secret); err == nil {
		t.Error("the old secret still authenticates after the rotation")
	}
	if _, err := r.authenticates(context.Background(), k.AccessKey, rot.Secret); err != nil {
		t.Errorf("the new secret: %v", err)
	}
	if st, _ := b.do("POST", "/api/keys/FKNONE/rotate", nil, nil); st != http.StatusNotFound {
		t.Errorf("rotate a missing key: %d", st)
	}
	b.must("DELETE", "/api/keys/"+k.AccessKey, nil, nil)
	if st, _ := b.do("DELETE", "/api/keys/"+k.AccessKey, nil, nil); st != http.StatusNotFound {
		t.Errorf("revoke twice: %d", st)
	}
	// Cluster calls answer 503 cluster_unavailable when no mgmtd answers:
	// the page shows its banner.
	c.KillMgmtd(0)
	if st, code := b.do("GET", "/api/overview", nil, nil); st != http.StatusServiceUnavailable || code != "cluster_unavailable" {
		t.Errorf("overview with no mgmtd: %d %q", st, code)
	}
}

// TestOverviewClientCache: a client with a cache reports its tiers through
// its registration, and the overview shows them beside the client.
func TestOverviewClientCache(t *testing.T) {
	c := startFS(t)
	r := fsRig(t, c, false)
	b := r.browser()
	b.signIn(r.admin)
	ctx := context.Background()
	f, err := r.fs.Create(ctx, "/f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(bytes.Repeat([]byte("x"), 300_000), 0)
	f.Close()
	cached, err := c.Dial("cached")
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	cached.SetMemoryCache(8 << 20)
	for range 2 {
		g, err := cached.Open(ctx, "/f")
		if err != nil {
			t.Fatal(err)
		}
		g.ReadAt(make([]byte, 300_000), 0)
		g.Close()
	}
	var o overviewJSON
	deadline := time.Now().Add(15 * time.Second)
	for {
		b.must("GET", "/api/overview", nil, &o)
		for _, s := range o.Services {
			if s.Kind == "client" && s.Cache != nil && s.Cache.Memory.Hits > 0 {
				if s.Cache.Memory.CapacityBytes != 8<<20 || s.Cache.Memory.UsedBytes != 300_000 || s.Cache.Disk.CapacityBytes != 0 {
					t.Fatalf("the client's cache: %+v", *s.Cache)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no client with cache hits in %+v", o.Services)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestHoldLastServingReplica: the console refuses to take a chain's last
// serving replica offline (409 last_serving) unless forced with the chain's
// id typed; a wrong id forces nothing.
func TestHoldLastServingReplica(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Chains: 1, Replicas: 1}})
	r := newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	b := r.browser()
	b.signIn(r.admin)
	if st, code := b.do("POST", "/api/targets/101/offline", map[string]any{}, nil); st != http.StatusConflict || code != "last_serving" {
		t.Fatalf("holding the last serving replica: %d %q", st, code)
	}
	if st, _ := b.do("POST", "/api/targets/101/offline", map[string]any{"force": true, "chain": 2}, nil); st != http.StatusBadRequest {
		t.Fatalf("forcing with the wrong chain id: %d", st)
	}
	waitChains(t, b, func(p chainsJSON) bool { return p.Chains[0].Targets[0].Public == "serving" }, "target 101 still serving")
	b.must("POST", "/api/targets/101/offline", map[string]any{"force": true, "chain": 1}, nil)
	waitChains(t, b, func(p chainsJSON) bool { return p.Chains[0].Targets[0].Public != "serving" }, "target 101 held offline")
	b.must("POST", "/api/targets/101/online", nil, nil)
	waitChains(t, b, func(p chainsJSON) bool { return p.Chains[0].Targets[0].Public == "serving" }, "target 101 serving again")
}

// TestCountAndHiddenStaging: /api/fs/count sums a tree for a delete's
// confirmation; the root listing leaves out the S3 gateway's staging area.
func TestCountAndHiddenStaging(t *testing.T) {
	c := startFS(t)
	r := fsRig(t, c, false)
	b := r.browser()
	b.signIn(r.admin)
	ctx := context.Background()
	for _, d := range []string{"/.flyfs-s3/staging", "/t/sub"} {
		if err := r.fs.MkdirAll(ctx, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/t/a", "/t/sub/b"} {
		f, err := r.fs.Create(ctx, p, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("hello"), 0)
		f.Close()
	}
	var n countJSON
	b.must("GET", "/api/fs/count?path=/t", nil, &n)
	if n != (countJSON{Files: 2, Dirs: 1, Bytes: 10, Complete: true}) {
		t.Errorf("count of /t: %+v", n)
	}
	if st, code := b.do("GET", "/api/fs/count?path=/missing", nil, nil); st != http.StatusNotFound {
		t.Errorf("count of a missing path: %d %q", st, code)
	}
	var l listJSON
	b.must("GET", "/api/fs/list?path=/", nil, &l)
	for _, e := range l.Entries {
		if e.Name == ".flyfs-s3" {
			t.Errorf("the root listing shows the S3 staging area: %+v", l.Entries)
		}
	}
}

// TestOverviewHistory: the console samples whether or not anyone is signed
// in, and ?range= picks how far back the charts go (up to a day).
func TestOverviewHistory(t *testing.T) {
	c := startFS(t)
	r := fsRig(t, c, false)
	time.Sleep(1500 * time.Millisecond) // nobody signed in: samples at 250 ms go on
	b := r.browser()
	b.signIn(r.admin)
	var o overviewJSON
	b.must("GET", "/api/overview?range=1h", nil, &o)
	if len(o.Samples) < 3 || o.RangeSeconds != 3600 {
		t.Fatalf("history gathered with nobody signed in: %d samples, range %v s", len(o.Samples), o.RangeSeconds)
	}
	b.must("GET", "/api/overview", nil, &o)
	if o.RangeSeconds != 300 {
		t.Errorf("default range: %v s", o.RangeSeconds)
	}
	b.must("GET", "/api/overview?range=24h", nil, &o)
	if len(o.Samples) < 3 || o.RangeSeconds != 86400 {
		t.Errorf("a day's range: %d samples (the console's first hour answers from its samples), range %v s", len(o.Samples), o.RangeSeconds)
	}
	for _, bad := range []string{"25h", "x", "-1m", "0s"} {
		if st, code := b.do("GET", "/api/overview?range="+bad, nil, nil); st != http.StatusBadRequest || code != "bad_request" {
			t.Errorf("range=%s: %d %q", bad, st, code)
		}
	}
}

// TestNodeMaintenanceAPI: a preview changes nothing, maintenance holds what
// the chains can spare, ending it releases.
func TestNodeMaintenanceAPI(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 3, Chains: 3, Replicas: 2}})
	r := newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	b := r.browser()
	b.signIn(r.admin)
	type planJSON struct {
		DryRun  bool           `json:"dryRun"`
		Targets []nodeHoldJSON `json:"targets"`
	}
	var plan planJSON
	b.must("POST", "/api/nodes/1/maintenance", map[string]any{"dryRun": true}, &plan)
	if !plan.DryRun || len(plan.Targets) == 0 {
		t.Fatalf("preview: %+v", plan)
	}
	for _, tg := range plan.Targets {
		if !tg.Changed || tg.ChainServing != 1 {
			t.Errorf("preview of target %+v: want held, its chain serving on one replica", tg)
		}
	}
	waitChains(t, b, func(p chainsJSON) bool { return p.Degraded == 0 }, "nothing held by the preview")
	b.must("POST", "/api/nodes/1/maintenance", map[string]any{}, &plan)
	waitChains(t, b, func(p chainsJSON) bool { return p.Degraded == len(plan.Targets) }, "the node's chains degraded")
	b.must("DELETE", "/api/nodes/1/maintenance", nil, &plan)
	waitChains(t, b, func(p chainsJSON) bool { return p.Degraded == 0 }, "every chain serving after the maintenance")
	if st, _ := b.do("POST", "/api/nodes/99/maintenance", map[string]any{"dryRun": true}, nil); st != http.StatusNotFound {
		t.Errorf("maintenance of a node without targets: %d", st)
	}
}

// TestListSortedAndSearched: ?sort= and ?q= read the directory whole, sort
// it (natural order by default, directories first), filter it by a part of
// the name, count what matched and page by offset.
func TestListSortedAndSearched(t *testing.T) {
	c := startFS(t)
	r := fsRig(t, c, false)
	b := r.browser()
	b.signIn(r.admin)
	ctx := context.Background()
	if err := r.fs.MkdirAll(ctx, "/d/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	for i, n := range []string{"part-10", "part-2", "part-1", "other"} {
		f, err := r.fs.Create(ctx, "/d/"+n, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt(make([]byte, 10*(i+1)), 0)
		f.Close()
	}
	names := func(l listJSON) string {
		var s []string
		for _, e := range l.Entries {
			s = append(s, e.Name)
		}
		return strings.Join(s, " ")
	}
	var l listJSON
	b.must("GET", "/api/fs/list?path=/d&sort=natural", nil, &l)
	if names(l) != "sub other part-1 part-2 part-10" || l.Total == nil || *l.Total != 5 {
		t.Errorf("natural: %q total %v", names(l), l.Total)
	}
	b.must("GET", "/api/fs/list?path=/d&sort=size&order=desc", nil, &l)
	if names(l) != "sub other part-1 part-2 part-10" {
		t.Errorf("size, descending (directories first still): %q", names(l))
	}
	b.must("GET", "/api/fs/list?path=/d&q=PART&limit=2&offset=1", nil, &l)
	if names(l) != "part-2 part-10" || *l.Total != 3 || l.Offset != 1 || l.More {
		t.Errorf("search, page 2: %q total %v offset %d more %v", names(l), *l.Total, l.Offset, l.More)
	}
	b.must("GET", "/api/fs/list?path=/d&sort=name", nil, &l)
	if names(l) != "other part-1 part-10 part-2 sub" {
		t.Errorf("byte order: %q", names(l))
	}
	if st, _ := b.do("GET", "/api/fs/list?path=/d&sort=color", nil, nil); st != http.StatusBadRequest {
		t.Errorf("an unknown sort: %d", st)
	}
}

// TestAuditTrail: the console's own actions and the holds it asks of mgmtd
// are in the audit trail with the signed-in key, newest first.
func TestAuditTrail(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Chains: 1, Replicas: 1}})
	r := newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	b := r.browser()
	b.signIn(r.admin)
	b.must("POST", "/api/fs/mkdir", map[string]any{"path": "/audited"}, nil)
	b.do("POST", "/api/targets/101/offline", map[string]any{}, nil) // refused: the last serving replica
	var a struct {
		Records []auditJSON `json:"records"`
	}
	b.must("GET", "/api/audit?limit=10", nil, &a)
	if len(a.Records) < 2 {
		t.Fatalf("audit trail: %+v", a.Records)
	}
	who := "console: " + r.admin.AccessKey
	hold, mkdir := a.Records[0], a.Records[1]
	if hold.By != who || hold.Action != "hold target 101 offline" || !strings.Contains(hold.Result, "last serving replica") {
		t.Errorf("the refused hold: %+v", hold)
	}
	if mkdir.By != who || mkdir.Action != "make directory /audited" || mkdir.Result != "ok" || mkdir.At.After(hold.At) {
		t.Errorf("the mkdir: %+v", mkdir)
	}
	b.must("GET", "/api/audit?limit=10&before="+hold.At.Format(time.RFC3339Nano), nil, &a)
	if len(a.Records) == 0 || a.Records[0].Action != "make directory /audited" {
		t.Errorf("the page before the hold: %+v", a.Records)
	}
}

// TestDeleteTreeInVersionedBucket: a recursive delete in a versioned bucket
// removes the tree file by file, so every file stays as a noncurrent
// version (one RemoveAll would collect them, and the namespace refuses it).
func TestDeleteTreeInVersionedBucket(t *testing.T) {
	c := startFS(t)
	r := fsRig(t, c, false)
	b := r.browser()
	b.signIn(r.admin)
	ctx := context.Background()
	if err := r.fs.MkdirAll(ctx, "/vb/run/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	bucket, err := r.fs.Stat(ctx, "/vb")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.fs.Meta().SetVersioning(ctx, bucket.ID, metaapi.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/vb/run/a", "/vb/run/sub/b"} {
		f, err := r.fs.Create(ctx, p, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("ckpt"), 0)
		f.Close()
	}
	b.must("POST", "/api/fs/delete", deleteReq{Path: "/vb/run", Recursive: true}, nil)
	if in, err := r.fs.Meta().Resolve(ctx, "/vb/run", false); err == nil {
		t.Fatalf("/vb/run still there after the recursive delete: %+v", in)
	}
	res, err := r.fs.Meta().ListVersions(ctx, metaapi.ListVersionsReq{Bucket: bucket.ID})
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, e := range res.Entries {
		if !e.DeleteMarker {
			kept[e.Key] = true
		}
	}
	if !kept["run/a"] || !kept["run/sub/b"] || len(kept) != 2 {
		t.Fatalf("versions kept: %v (entries %+v)", kept, res.Entries)
	}
}

// TestOverviewGCBytes: the overview tells live bytes from removed files'
// bytes awaiting GC.
func TestOverviewGCBytes(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4}, ChunkSize: 1 << 20, GCGrace: time.Hour})
	r := fsRig(t, c, false)
	b := r.browser()
	b.signIn(r.admin)
	ctx := context.Background()
	for _, p := range []string{"/keep", "/gone"} {
		f, err := r.fs.Create(ctx, p, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt(make([]byte, 300_000), 0)
		f.Close()
	}
	if err := r.fs.Remove(ctx, "/gone"); err != nil {
		t.Fatal(err)
	}
	var o overviewJSON
	b.must("GET", "/api/overview", nil, &o)
	if o.Namespace == nil || o.Namespace.Bytes != 600_000 || o.Namespace.GCBytes != 300_000 || o.GCQueue == nil || *o.GCQueue != 1 {
		t.Fatalf("namespace %+v, gc queue %v", o.Namespace, o.GCQueue)
	}
}

// TestChainTable: the console proposes a table over the live storage nodes,
// previews it with its balance figures, refuses bad shapes and ids that
// exist, and creates the chains (audited with the signed-in key).
func TestChainTable(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 3, Chains: 2, Replicas: 2}})
	r := newRig(t, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	b := r.browser()
	b.signIn(r.admin)
	var d chainTableJSON
	b.must("GET", "/api/chains/new", nil, &d)
	if !slices.Equal(d.Nodes, []uint32{1, 2, 3}) || d.Replicas != 3 || d.FirstChain != 3 || d.DisksPerNode != 1 || d.Chains != 8 || d.Layout != "balanced" {
		t.Fatalf("proposed table: %+v", d)
	}
	d.Replicas, d.Chains = 2, 6
	var plan struct {
		Chains  []newChainJSON `json:"chains"`
		Balance balanceJSON    `json:"balance"`
		Created bool           `json:"created"`
	}
	b.must("POST", "/api/chains/plan", d, &plan)
	if len(plan.Chains) != 6 || plan.Chains[0].ID != 3 || plan.Chains[0].Targets[0].ID != 301 || plan.Created ||
		!strings.Contains(plan.Balance.Text, "3 disks on 3 nodes, 2 replicas, 6 chains") || plan.Balance.Worst <= 0 {
		t.Fatalf("plan: %+v", plan)
	}
	chainsNow := func() map[routing.ChainID]*routing.Chain {
		t.Helper()
		resp, err := c.FS().Mgmtd().GetRouting(context.Background(), 0)
		if err != nil || resp.Info == nil {
			t.Fatalf("routing: %v", err)
		}
		return resp.Info.Chains
	}
	if len(chainsNow()) != 2 {
		t.Fatalf("a plan created chains: %d", len(chainsNow()))
	}
	for _, bad := range []struct {
		mend func(*chainTableJSON)
		code int
		want string
	}{
		{func(j *chainTableJSON) { j.Replicas = 4 }, http.StatusBadRequest, "bad_request"},
		{func(j *chainTableJSON) { j.Layout = "random" }, http.StatusBadRequest, "bad_request"},
		{func(j *chainTableJSON) { j.Nodes = nil }, http.StatusBadRequest, "bad_request"},
		{func(j *chainTableJSON) { j.FirstChain = 2 }, http.StatusConflict, "exists"},
	} {
		j := d
		bad.mend(&j)
		if code, e := b.do("POST", "/api/chains", j, nil); code != bad.code || e != bad.want {
			t.Errorf("%+v: %d %s, want %d %s", j, code, e, bad.code, bad.want)
		}
	}
	b.must("POST", "/api/chains", d, &plan)
	if !plan.Created {
		t.Fatalf("create: %+v", plan)
	}
	after := chainsNow()
	for id := routing.ChainID(3); id <= 8; id++ {
		ch, ok := after[id]
		if !ok || len(ch.Targets) != 2 || ch.Targets[0].Node == ch.Targets[1].Node {
			t.Fatalf("chain %d after create: %+v", id, ch)
		}
	}
	var a struct {
		Records []auditJSON `json:"records"`
	}
	b.must("GET", "/api/audit?limit=5", nil, &a)
	if len(a.Records) == 0 || a.Records[0].By != "console: "+r.admin.AccessKey || a.Records[0].Action != "set chains 3, 4, 5, 6, 7, 8" {
		t.Errorf("audit trail: %+v", a.Records)
	}
}

// TestOverviewRetained: the overview tells apart what noncurrent versions,
// the trash and snapshots hold of the namespace's bytes, as the console
// counted them in the background before anyone asked.
func TestOverviewRetained(t *testing.T) {
	c := harness.StartFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4}, ChunkSize: 1 << 20, TrashDays: 1})
	retainedTree(t, c.FS())
	r := fsRig(t, c, false)
	b := r.browser()
	b.signIn(r.admin)
	var o overviewJSON
	deadline := time.Now().Add(30 * time.Second)
	for {
		b.must("GET", "/api/overview", nil, &o)
		if o.Namespace != nil && o.Namespace.Retained != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no count of versions, trash and snapshots within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	got := *o.Namespace.Retained
	got.At = time.Time{}
	want := retainedJSON{VersionFiles: 2, VersionBytes: 1500, DeleteMarkers: 1, TrashEntries: 2, TrashBytes: 57_000,
		SnapshotFiles: 1, SnapshotBytes: 90_000, Complete: true}
	if got != want {
		t.Fatalf("retained %+v, want %+v", got, want)
	}
	if live := o.Namespace.Bytes - int64(o.Namespace.GCBytes) - 1500 - 57_000 - 90_000; live != 3000+90_000 {
		t.Errorf("live bytes %d (namespace %+v), want the current model and the snapshotted file", live, o.Namespace)
	}
}

// retainedTree makes what the overview's count tells apart: a versioned
// bucket with 1,500 bytes in two noncurrent versions and a delete marker,
// 57,000 bytes in the trash (a file and a tree), and a 90,000-byte file in
// a snapshot; 3,000 bytes of live files besides the snapshotted one.
func retainedTree(t *testing.T, fs *client.FS) {
	t.Helper()
	ctx := context.Background()
	put := func(p string, n int) {
		t.Helper()
		f, err := fs.Create(ctx, p, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(make([]byte, n), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"/vb", "/plain/tree/sub", "/snapped"} {
		if err := fs.MkdirAll(ctx, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	vb, err := fs.Stat(ctx, "/vb")
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Meta().SetVersioning(ctx, vb.ID, metaapi.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	put("/vb/model", 1000)
	put("/vb/.tmp", 3000)
	if err := fs.Rename(ctx, "/vb/.tmp", "/vb/model"); err != nil { // the 1,000 bytes become a noncurrent version
		t.Fatal(err)
	}
	put("/vb/gone", 500)
	if err := fs.Remove(ctx, "/vb/gone"); err != nil { // a version and a delete marker
		t.Fatal(err)
	}
	put("/plain/one", 7000)
	put("/plain/tree/a", 20_000)
	put("/plain/tree/sub/b", 30_000)
	if err := fs.Remove(ctx, "/plain/one"); err != nil { // to the trash
		t.Fatal(err)
	}
	plain, err := fs.Stat(ctx, "/plain")
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Meta().RemoveAll(ctx, plain.ID, "tree"); err != nil { // a tree to the trash
		t.Fatal(err)
	}
	put("/snapped/s", 90_000)
	snapped, err := fs.Stat(ctx, "/snapped")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Meta().SnapshotCreate(ctx, snapped.ID, "s1"); err != nil {
		t.Fatal(err)
	}

}
