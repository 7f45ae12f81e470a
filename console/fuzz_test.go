package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/flyfs/flyfs/e2e/harness"
)

// jsonCall is a console API call that reads a JSON body.
type jsonCall struct {
	method, path string
	// body is a fresh request body of the handler's type.
	body func() any
}

// jsonCalls is every console API call with a JSON body (the readJSON
// callers). {key} is an access key's id.
var jsonCalls = []jsonCall{
	{"POST", "/api/session", func() any { return new(signInReq) }},
	{"POST", "/api/keys", func() any { return new(KeySpec) }},
	{"PUT", "/api/keys/{key}/buckets", func() any { return new(bucketsReq) }},
	{"POST", "/api/fs/mkdir", func() any { return new(mkdirReq) }},
	{"POST", "/api/fs/rename", func() any { return new(renameReq) }},
	{"POST", "/api/fs/delete", func() any { return new(deleteReq) }},
	{"POST", "/api/fs/uploads", func() any { return new(uploadStartReq) }},
	{"POST", "/api/chains/plan", func() any { return new(chainTableJSON) }},
}

func jsonCallIndex(method, path string) uint8 {
	for i, c := range jsonCalls {
		if c.method == method && c.path == path {
			return uint8(i)
		}
	}
	panic("no such JSON call: " + method + " " + path)
}

// strictJSON decodes body as readJSON should: one JSON value of v's type,
// no unknown field, nothing after it.
func strictJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after the JSON value (%v)", err)
	}
	return nil
}

// FuzzConsoleJSON sends arbitrary bodies to every console API call that
// reads JSON, through the console's http.Handler, signed in as an admin,
// over an in-process cluster (one per fuzz process). Every answer must be
// JSON with a status below 500 (an error answer with its code and text),
// a body that is not one JSON value of the call's request type must be
// refused with 400, and nothing may appear in the working directory (an
// empty one the target moves into).
func FuzzConsoleJSON(f *testing.F) {
	c := harness.StartFS(f, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 2, NoSync: true}})
	r := newRig(f, rigConfig{mgmtd: c.MgmtdAddrs(), rc: c.RPCClient("console"), fs: c.FS()})
	cwd := f.TempDir()
	f.Chdir(cwd)

	serve := func(method, path string, body []byte, remote string, cookie *http.Cookie, csrf string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if remote != "" {
			req.RemoteAddr = remote
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		if csrf != "" {
			req.Header.Set(csrfHeader, csrf)
		}
		w := httptest.NewRecorder()
		r.con.ServeHTTP(w, req)
		return w
	}
	signIn, _ := json.Marshal(signInReq{AccessKey: r.admin.AccessKey, SecretKey: r.admin.Secret})
	w := serve("POST", "/api/session", signIn, "", nil, "")
	var sess sessionResp
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &sess) != nil || len(w.Result().Cookies()) != 1 {
		f.Fatalf("sign-in: %d %s", w.Code, w.Body)
	}
	cookie := w.Result().Cookies()[0]
	must := func(method, path string, body any, out any) {
		b, _ := json.Marshal(body)
		w := serve(method, path, b, "", cookie, sess.CSRFToken)
		if w.Code != http.StatusOK || out != nil && json.Unmarshal(w.Body.Bytes(), out) != nil {
			f.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
	}
	must("POST", "/api/fs/mkdir", mkdirReq{Path: "/data/sub", Parents: true}, nil)
	var up uploadJSON
	must("POST", "/api/fs/uploads", uploadStartReq{Path: "/data/f"}, &up)
	must("POST", "/api/fs/uploads/"+up.ID+"/complete", nil, nil)

	add := func(method, path string, body any) {
		b, err := json.Marshal(body)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(jsonCallIndex(method, path), b)
	}
	add("POST", "/api/session", signInReq{AccessKey: r.admin.AccessKey, SecretKey: r.admin.Secret})
	add("POST", "/api/session", signInReq{AccessKey: r.user.AccessKey, SecretKey: "wrong"})
	add("POST", "/api/keys", KeySpec{Description: "fuzz", Buckets: []BucketPerm{{Bucket: "data", Read: true}, {Bucket: "*", Write: true}}})
	add("POST", "/api/keys", KeySpec{Admin: true})
	add("PUT", "/api/keys/{key}/buckets", bucketsReq{Buckets: []BucketPerm{{Bucket: "data", Read: true, Write: true}}})
	add("POST", "/api/fs/mkdir", mkdirReq{Path: "/data/a/b", Parents: true})
	add("POST", "/api/fs/mkdir", mkdirReq{Path: "/data/x"})
	add("POST", "/api/fs/rename", renameReq{From: "/data/sub", To: "/data/sub2", NoReplace: true})
	add("POST", "/api/fs/rename", renameReq{From: "/data/f", To: "/data/sub/f"})
	add("POST", "/api/fs/delete", deleteReq{Path: "/data/sub", Recursive: true})
	add("POST", "/api/fs/delete", deleteReq{Path: "/data/f"})
	add("POST", "/api/fs/uploads", uploadStartReq{Path: "/data/up", Size: 10})
	add("POST", "/api/chains/plan", chainTableJSON{Nodes: []uint32{1}, DisksPerNode: 2, Replicas: 1, Chains: 4, Layout: "simple", FirstChain: 50})
	f.Add(jsonCallIndex("POST", "/api/fs/mkdir"), []byte(`{"path":"/data/y"} {"path":"/z"}`))
	f.Add(jsonCallIndex("POST", "/api/fs/mkdir"), []byte(`{"path":"/data/y","mode":1}`))
	f.Add(jsonCallIndex("POST", "/api/keys"), []byte(`{"buckets":null,"admin":"yes"}`))

	var n int
	f.Fuzz(func(t *testing.T, call uint8, body []byte) {
		jc := jsonCalls[int(call)%len(jsonCalls)]
		path := strings.ReplaceAll(jc.path, "{key}", r.user.AccessKey)
		// Sign-ins come from many addresses, so that the per-address
		// limiter does not refuse them all.
		n++
		w := serve(jc.method, path, body, fmt.Sprintf("10.0.%d.%d:4000", n>>8&0xff, n&0xff), cookie, sess.CSRFToken)
		what := fmt.Sprintf("%s %s %q", jc.method, path, body)
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s: %d with Content-Type %q: %s", what, w.Code, ct, w.Body)
		}
		if w.Code >= 500 || w.Code < 200 {
			t.Fatalf("%s: status %d: %s", what, w.Code, w.Body)
		}
		var e apiErr
		switch {
		case w.Code == http.StatusOK:
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("%s: 200 with a body that is not JSON: %q", what, w.Body)
			}
		case json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Code == "" || e.Error == "":
			t.Fatalf("%s: error answer %d that is not a JSON error: %q", what, w.Code, w.Body)
		}
		if err := strictJSON(body, jc.body()); err != nil && (w.Code != http.StatusBadRequest || e.Code != "bad_request") {
			t.Fatalf("%s: a body that is not a %T (%v) got %d: %s", what, jc.body(), err, w.Code, w.Body)
		}
		if ents, err := os.ReadDir(cwd); err != nil || len(ents) != 0 {
			t.Fatalf("%s: the working directory changed: %v %v", what, ents, err)
		}
		// An upload started is aborted, so that staging files and their
		// write sessions do not pile up.
		var up uploadJSON
		if jc.path == "/api/fs/uploads" && w.Code == http.StatusOK && json.Unmarshal(w.Body.Bytes(), &up) == nil {
			if w := serve("DELETE", "/api/fs/uploads/"+up.ID, nil, "", cookie, sess.CSRFToken); w.Code != http.StatusOK {
				t.Fatalf("abort upload %s: %d %s", up.ID, w.Code, w.Body)
			}
		}
	})
}
