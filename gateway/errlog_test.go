package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// records are the JSON log lines written so far.
func (s *syncBuffer) records(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// TestLiveErrorsLoggedWithRequestID: an S3 error is logged with the request
// id its body's RequestId and its x-amz-request-id header carry: a server
// error (5xx) at warn, a client error (4xx) at debug; no request is logged
// at info.
func TestLiveErrorsLoggedWithRequestID(t *testing.T) {
	var sink syncBuffer
	log := slog.New(slog.NewJSONHandler(&sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l := startGWWith(t, func(c *Config) { c.Logger = log })
	l.gw.Close() // its background sweeper uses the namespace too: stopped first, nothing races the swap
	f := &failingNS{namespace: l.gw.meta}
	l.gw.meta = f
	f.set("broken")

	call := func(method, path string, wantStatus int) string {
		t.Helper()
		resp, err := http.DefaultClient.Do(l.signed(t, method, path, nil, nil, rootAK, rootSK, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		id := resp.Header.Get("X-Amz-Request-Id")
		e := readError(t, resp)
		if resp.StatusCode != wantStatus || id == "" || e.RequestID != id {
			t.Fatalf("%s %s: %d, header id %q, body %+v; want %d with the same id", method, path, resp.StatusCode, id, e, wantStatus)
		}
		return id
	}
	serverErr := call("PUT", "/broken", http.StatusInternalServerError) // the Mkdir fails: metad cut off
	clientErr := call("GET", "/nobucket/key", http.StatusNotFound)
	resp, err := http.DefaultClient.Do(l.signed(t, "PUT", "/fine", nil, nil, rootAK, rootSK, time.Now()))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("create bucket: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	byID := map[string]map[string]any{}
	for _, r := range sink.records(t) {
		if id, ok := r["request_id"].(string); ok {
			if byID[id] != nil {
				t.Errorf("request %s logged twice: %v and %v", id, byID[id], r)
			}
			byID[id] = r
		}
		if r["level"] == "INFO" && r["request_id"] != nil {
			t.Errorf("a request logged at info: %v", r)
		}
	}
	for _, c := range []struct {
		id, level, code, op string
		status              float64
	}{
		{serverErr, "WARN", "InternalError", "CreateBucket", 500},
		{clientErr, "DEBUG", "NoSuchBucket", "GetObject", 404},
	} {
		r := byID[c.id]
		if r == nil {
			t.Errorf("request %s (%s) not logged; log:\n%s", c.id, c.code, sink.b.String())
			continue
		}
		if r["level"] != c.level || r["code"] != c.code || r["op"] != c.op || r["status"] != c.status || r["err"] == "" {
			t.Errorf("request %s logged as %v, want %s %s %s %v", c.id, r, c.level, c.op, c.code, c.status)
		}
	}
	if len(byID) != 2 {
		t.Errorf("%d requests logged, want the two errors: %v", len(byID), byID)
	}
}

// A storm of server errors logs errLogBurst warn lines, then errLogRate a
// second, counting what it held back in the next line let through.
func TestErrLimiter(t *testing.T) {
	var l errLimiter
	now := time.Now()
	for i := 0; i < errLogBurst; i++ {
		if ok, n := l.allow(now); !ok || n != 0 {
			t.Fatalf("line %d of the burst: %v %d", i, ok, n)
		}
	}
	for i := 0; i < 7; i++ {
		if ok, _ := l.allow(now); ok {
			t.Fatal("let through past the burst")
		}
	}
	now = now.Add(time.Second / errLogRate)
	if ok, n := l.allow(now); !ok || n != 7 {
		t.Fatalf("after a refill: %v, suppressed %d, want 7", ok, n)
	}
}
