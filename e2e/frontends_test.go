package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestServerFrontEndsShareOneNamespace runs `flyfs server` with every front
// end (FUSE mount, S3 gateway, console) as a child process and checks that
// they are views of one namespace with one set of access keys:
//   - a file uploaded through the console reads back through S3 and the mount;
//   - an object PUT through S3 is a file in the mount;
//   - a key created in the console works for S3, within its bucket only;
//   - a directory renamed in the console moves in S3 listings at once.
func TestServerFrontEndsShareOneNamespace(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the FUSE mount needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	t.Setenv("AWS_CA_BUNDLE", "")
	bin := flyfsBinary(t)
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	os.MkdirAll(mnt, 0o755)
	mgmtd, metad, s3addr, con := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	log := filepath.Join(dir, "server.log")
	p := startProc(t, bin, log, "server", "--data", filepath.Join(dir, "data"), "--mgmtd-addr", mgmtd, "--metad-addr", metad,
		"--s3-addr", s3addr, "--console-addr", con, "--mount", mnt, "--no-sync")
	t.Cleanup(func() { p.kill(); runQuiet("umount", "-l", mnt) })
	waitListening(t, con)
	out, _ := os.ReadFile(log)
	var ak, sk string
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, "root key  access key "); i >= 0 {
			fmt.Sscanf(strings.ReplaceAll(line[i+len("root key  access key "):], ",", " "), "%s secret %s", &ak, &sk)
		}
	}
	if ak == "" || sk == "" {
		t.Fatalf("no root key printed:\n%s", out)
	}
	ctx := context.Background()
	s3c := func(id, secret string) *s3.Client {
		return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + s3addr), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(id, secret, "")})
	}
	root := s3c(ak, sk)
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("data")}); err != nil {
		t.Fatal(err)
	}

	// The console, signed in with the gateway's root key.
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	base := "http://" + con
	var csrf string
	call := func(method, path string, body any, raw []byte, into any) {
		t.Helper()
		var rd io.Reader
		ctype := "application/json"
		if raw != nil {
			rd, ctype = bytes.NewReader(raw), "application/octet-stream"
		} else if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("Content-Type", ctype)
		if csrf != "" {
			req.Header.Set("X-CSRF-Token", csrf)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s: %s %s", method, path, resp.Status, b)
		}
		if into != nil {
			if err := json.Unmarshal(b, into); err != nil {
				t.Fatalf("%s %s: %v: %s", method, path, err, b)
			}
		}
	}
	var sess struct {
		CSRF string `json:"csrfToken"`
	}
	call("POST", "/api/session", map[string]string{"accessKey": ak, "secretKey": sk}, nil, &sess)
	csrf = sess.CSRF

	// Upload through the console, in two parts.
	data := bytes.Repeat([]byte("console->s3 "), 200_000) // 2.4 MB
	var up struct {
		ID string `json:"id"`
	}
	call("POST", "/api/fs/mkdir", map[string]any{"path": "/data/run1", "parents": true}, nil, nil)
	call("POST", "/api/fs/uploads", map[string]any{"path": "/data/run1/weights.bin", "size": len(data)}, nil, &up)
	half := len(data) / 2
	call("PUT", fmt.Sprintf("/api/fs/uploads/%s?offset=0", up.ID), nil, data[:half], nil)
	call("PUT", fmt.Sprintf("/api/fs/uploads/%s?offset=%d", up.ID, half), nil, data[half:], nil)
	call("POST", fmt.Sprintf("/api/fs/uploads/%s/complete", up.ID), nil, nil, nil)
	obj, err := root.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("data"), Key: aws.String("run1/weights.bin")})
	if err != nil {
		t.Fatalf("S3 GET of the console's upload: %v", err)
	}
	got, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	if !bytes.Equal(got, data) {
		t.Fatalf("S3 read %d bytes of the console's %d-byte upload, equal %v", len(got), len(data), bytes.Equal(got, data))
	}
	if fb, err := os.ReadFile(filepath.Join(mnt, "data/run1/weights.bin")); err != nil || !bytes.Equal(fb, data) {
		t.Fatalf("mount read of the console's upload: %d bytes, %v", len(fb), err)
	}

	// S3 PUT, read through the mount.
	if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("data"), Key: aws.String("run1/config.json"), Body: strings.NewReader(`{"lr":3e-4}`)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second) // the mount's entry cache (1 s)
	for {
		b, err := os.ReadFile(filepath.Join(mnt, "data/run1/config.json"))
		if err == nil && string(b) == `{"lr":3e-4}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("S3 PUT not seen through the mount: %q %v", b, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// A key made in the console works for S3, on its bucket only.
	var key struct {
		AccessKey string `json:"accessKey"`
		Secret    string `json:"secret"`
	}
	call("POST", "/api/keys", map[string]any{"description": "reader", "buckets": []map[string]any{{"bucket": "data", "read": true}}}, nil, &key)
	reader := s3c(key.AccessKey, key.Secret)
	if _, err := reader.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("data"), Key: aws.String("run1/config.json")}); err != nil {
		t.Fatalf("a console-made read key cannot read its bucket: %v", err)
	}
	if _, err := reader.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("data"), Key: aws.String("x"), Body: strings.NewReader("x")}); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("a read-only key wrote: %v", err)
	}

	// Rename a directory in the console: S3 sees it moved, whole.
	call("POST", "/api/fs/rename", map[string]any{"from": "/data/run1", "to": "/data/run2"}, nil, nil)
	l, err := root.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("data")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range l.Contents {
		keys = append(keys, *o.Key)
	}
	// run1 was made explicitly (the console's mkdir), so it lists as the
	// marker run2/ too (docs/s3-mapping.md).
	if strings.Join(keys, ",") != "run2/,run2/config.json,run2/weights.bin" {
		t.Fatalf("S3 listing after the console's rename: %v", keys)
	}
}

func runQuiet(name string, args ...string) { _ = osexec.Command(name, args...).Run() }
