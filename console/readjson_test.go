package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadJSON: a body is one JSON value of the request's type and nothing
// else (FuzzConsoleJSON found a second value after the first accepted, and
// the first one acted on).
func TestReadJSON(t *testing.T) {
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{"path":"/a"}`, true},
		{" {\"path\":\"/a\",\"parents\":true}\r\n\t ", true},
		{`{"path":"/a"} {"path":"/b"}`, false},
		{`{"path":"/a"}{}`, false},
		{`{"path":"/a"} x`, false},
		{`{"path":"/a"}}`, false},
		{`{"path":"/a"} null`, false},
		{`{"path":"/a","mode":1}`, false},
		{`{"path":1}`, false},
		{`{"path":"/a"`, false},
		{``, false},
	} {
		req := httptest.NewRequest("POST", "/api/fs/mkdir", strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		var v mkdirReq
		if got := readJSON(w, req, &v); got != c.ok || !c.ok && w.Code != http.StatusBadRequest {
			t.Errorf("%q: accepted %v (status %d), want %v", c.body, got, w.Code, c.ok)
		}
	}
}
