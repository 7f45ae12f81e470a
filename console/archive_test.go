package console

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestArchive: several entries of a directory download as one zip, files
// byte-identical, a directory with its tree (empty directories kept, uploads
// in flight left out); names are checked before anything is sent.
func TestArchive(t *testing.T) {
	c := startFS(t)
	r := fsRig(t, c, false)
	b := r.browser()
	b.signIn(r.admin)
	ctx := context.Background()
	files := map[string][]byte{
		"/z/a":                          bytes.Repeat([]byte("alpha;"), 300_000), // across chunks
		"/z/sub/c":                      []byte("see"),
		"/z/sub/" + hiddenUpload + "x1": []byte("staging"),
		"/z/skip":                       []byte("not asked for"),
	}
	for _, p := range []string{"/z/sub/empty", "/z/sub/deeper"} {
		if err := r.fs.MkdirAll(ctx, p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files["/z/sub/deeper/d"] = []byte{}
	for p, data := range files {
		f, err := r.fs.Create(ctx, p, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	get := func(q url.Values) (*http.Response, []byte) {
		t.Helper()
		resp, err := b.hc.Get(r.srv.URL + "/api/fs/archive?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	resp, body := get(url.Values{"dir": {"/z"}, "name": {"a", "sub"}})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/zip" ||
		resp.Header.Get("Content-Disposition") != "attachment; filename*=UTF-8''z.zip" {
		t.Fatalf("archive: %d %v", resp.StatusCode, resp.Header)
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, zf := range zr.File {
		names = append(names, zf.Name)
		if zf.FileInfo().IsDir() {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if want := files["/z/"+zf.Name]; err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes (want %d), %v", zf.Name, len(got), len(want), err)
		}
	}
	if want := []string{"a", "sub/", "sub/c", "sub/deeper/", "sub/deeper/d", "sub/empty/"}; !slices.Equal(names, want) {
		t.Errorf("archive holds %q, want %q", names, want)
	}
	// Info-ZIP's unzip, as a user opens it.
	if _, err := exec.LookPath("unzip"); err == nil {
		zp := filepath.Join(t.TempDir(), "z.zip")
		if err := os.WriteFile(zp, body, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("unzip", "-t", zp).CombinedOutput(); err != nil || !strings.Contains(string(out), "No errors detected") {
			t.Errorf("unzip -t: %v\n%s", err, out)
		}
	}
	for _, bad := range []struct {
		q    url.Values
		code int
	}{
		{url.Values{"dir": {"/z"}, "name": {"a", "missing"}}, http.StatusNotFound},
		{url.Values{"dir": {"/z"}, "name": {"sub/c"}}, http.StatusBadRequest},
		{url.Values{"dir": {"/z"}, "name": {"a", "a"}}, http.StatusBadRequest},
		{url.Values{"dir": {"/z"}, "name": {".."}}, http.StatusBadRequest},
		{url.Values{"dir": {"/z"}}, http.StatusBadRequest},
		{url.Values{"dir": {"/z/a"}, "name": {"x"}}, http.StatusConflict},
		{url.Values{"dir": {"/nowhere"}, "name": {"x"}}, http.StatusNotFound},
	} {
		if resp, body := get(bad.q); resp.StatusCode != bad.code || resp.Header.Get("Content-Type") == "application/zip" {
			t.Errorf("%v: %d %s, want %d", bad.q, resp.StatusCode, body, bad.code)
		}
	}
	// Someone not signed in gets nothing.
	resp, err = http.Get(r.srv.URL + "/api/fs/archive?" + url.Values{"dir": {"/z"}, "name": {"a"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("archive without a session: %d", resp.StatusCode)
	}
}
