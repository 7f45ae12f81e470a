package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/e2e/harness"
)

const (
	rootAK = "FLYTESTROOT"
	rootSK = "flytest-root-secret-key"
)

// liveGW is a gateway on a real loopback listener over an in-process
// cluster.
type liveGW struct {
	c   *harness.FSCluster
	gw  *Gateway
	url string
	fs  *client.FS
}

func startGW(t testing.TB) *liveGW { return startGWWith(t, nil) }

// startGWWith is startGW with the gateway's configuration changed by mod.
func startGWWith(t testing.TB, mod func(*Config)) *liveGW {
	return startGWOn(t, harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4}, mod)
}

// startGWOn is startGWWith on a cluster of the given configuration.
func startGWOn(t testing.TB, cc harness.ClusterConfig, mod func(*Config)) *liveGW {
	t.Helper()
	return startGWFS(t, harness.FSConfig{ClusterConfig: cc, ChunkSize: 1 << 20}, mod)
}

// startGWFS is startGW over a file system shaped by fc (several metads, KV
// faults).
func startGWFS(t testing.TB, fc harness.FSConfig, mod func(*Config)) *liveGW {
	t.Helper()
	t.Setenv("AWS_CA_BUNDLE", "")
	c := harness.StartFS(t, fc)
	cfg := Config{FS: c.FS(), RootAccessKey: rootAK, RootSecretKey: rootSK, Domains: []string{"localhost"},
		Logger: testLogger()}
	if mod != nil {
		mod(&cfg)
	}
	gw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gw}
	go srv.Serve(l)
	t.Cleanup(func() {
		srv.Close()
		gw.Close()
	})
	return &liveGW{c: c, gw: gw, url: "http://" + l.Addr().String(), fs: c.FS()}
}

// sdk returns an AWS SDK client for the gateway (path style by default).
func (l *liveGW) sdk(t testing.TB, ak, sk string, opts ...func(*s3.Options)) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(l.url),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(ak, sk, ""),
		HTTPClient:   &http.Client{Timeout: 5 * time.Minute},
	}, opts...)
}

func (l *liveGW) root(t testing.TB) *s3.Client { return l.sdk(t, rootAK, rootSK) }

func errCodeOf(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err == nil {
		return ""
	}
	return "?" + err.Error()
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func mustPut(t testing.TB, c *s3.Client, bucket, key string, data []byte) *s3.PutObjectOutput {
	t.Helper()
	out, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
	return out
}

func mustGet(t testing.TB, c *s3.Client, bucket, key string) []byte {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("get %s/%s body: %v", bucket, key, err)
	}
	return b
}

func mustBucket(t testing.TB, c *s3.Client, bucket string) {
	t.Helper()
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
}

func TestLiveBasics(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "basics")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("basics")}); errCodeOf(err) != "BucketAlreadyOwnedByYou" {
		t.Fatalf("create twice: %v", err)
	}
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("Bad_Name")}); errCodeOf(err) != "InvalidBucketName" {
		t.Fatalf("bad bucket name: %v", err)
	}
	data := randBytes(3<<20 + 17)
	put := mustPut(t, c, "basics", "dir/sub/obj.bin", data)
	if got := mustGet(t, c, "basics", "dir/sub/obj.bin"); !bytes.Equal(got, data) {
		t.Fatal("GET returned other bytes")
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("basics"), Key: aws.String("dir/sub/obj.bin")})
	if err != nil || *head.ContentLength != int64(len(data)) || *head.ETag != *put.ETag {
		t.Fatalf("head: %v %+v (put etag %s)", err, head, *put.ETag)
	}
	// The object is a file of the namespace.
	st, err := l.fs.Stat(ctx, "/basics/dir/sub/obj.bin")
	if err != nil || st.Length != uint64(len(data)) {
		t.Fatalf("POSIX stat: %v %+v", err, st)
	}
	dir, err := l.fs.Stat(ctx, "/basics/dir")
	if err != nil || !dir.Implicit {
		t.Fatalf("implicit parent: %v %+v", err, dir)
	}
	// Buckets list.
	lb, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(lb.Buckets) != 1 || *lb.Buckets[0].Name != "basics" {
		t.Fatalf("list buckets: %v %+v", err, lb)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("basics"), Key: aws.String("nope")}); errCodeOf(err) != "NoSuchKey" {
		t.Fatalf("missing key: %v", err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("nobucket"), Key: aws.String("k")}); errCodeOf(err) != "NoSuchBucket" {
		t.Fatalf("missing bucket: %v", err)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("basics")}); errCodeOf(err) != "BucketNotEmpty" {
		t.Fatalf("delete non-empty bucket: %v", err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("basics"), Key: aws.String("dir/sub/obj.bin")}); err != nil {
		t.Fatal(err)
	}
	// The implicit parents went with their last object.
	if _, err := l.fs.Meta().Resolve(ctx, "/basics/dir", false); client.Errno(err) == 0 {
		t.Fatal("implicit directory left behind")
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("basics")}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(l.url, "localhost") {
		t.Fatal("unreachable")
	}
}

// testLogger discards the gateway's logs unless FLYFS_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("FLYFS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
