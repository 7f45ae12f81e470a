package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/flyfs/flyfs/core/access"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// signed builds a request signed with the SDK's signer.
func (l *liveGW) signed(t testing.TB, method, path string, body []byte, hdr map[string]string, ak, sk string, at time.Time) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, l.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	hash := sha256Hex(body)
	r.Header.Set("X-Amz-Content-Sha256", hash)
	s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err := s.SignHTTP(context.Background(), aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk}, r, hash, "s3", "us-east-1", at); err != nil {
		t.Fatal(err)
	}
	return r
}

func readError(t testing.TB, resp *http.Response) errorBody {
	t.Helper()
	defer resp.Body.Close()
	var e errorBody
	b, _ := io.ReadAll(resp.Body)
	xml.Unmarshal(b, &e)
	return e
}

func TestLiveTraps(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "traps")

	// Clock skew beyond 15 minutes.
	resp, err := http.DefaultClient.Do(l.signed(t, "GET", "/traps", nil, nil, rootAK, rootSK, time.Now().Add(-20*time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	if e := readError(t, resp); resp.StatusCode != 403 || e.Code != "RequestTimeTooSkewed" || e.RequestID == "" || resp.Header.Get("X-Amz-Request-Id") != e.RequestID {
		t.Fatalf("skew: %d %+v", resp.StatusCode, e)
	}
	// Wrong secret, unknown key, anonymous.
	resp, _ = http.DefaultClient.Do(l.signed(t, "GET", "/traps", nil, nil, rootAK, "wrong", time.Now()))
	if e := readError(t, resp); e.Code != "SignatureDoesNotMatch" {
		t.Fatalf("bad secret: %+v", e)
	}
	resp, _ = http.DefaultClient.Do(l.signed(t, "GET", "/traps", nil, nil, "NOSUCHKEY", "x", time.Now()))
	if e := readError(t, resp); e.Code != "InvalidAccessKeyId" {
		t.Fatalf("unknown key: %+v", e)
	}
	mustPut(t, c, "traps", "pub/obj", []byte("public"))
	resp, _ = http.Get(l.url + "/traps/pub/obj")
	if e := readError(t, resp); resp.StatusCode != 403 || e.Code != "AccessDenied" {
		t.Fatalf("anonymous on a private bucket: %d %+v", resp.StatusCode, e)
	}
	// public-read lets anonymous callers read and list, never write.
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("traps"), ACL: "public-read"}); err != nil {
		t.Fatal(err)
	}
	resp, _ = http.Get(l.url + "/traps/pub/obj")
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(b) != "public" {
		t.Fatalf("anonymous on a public-read bucket: %d %s", resp.StatusCode, b)
	}
	resp.Body.Close()
	req, _ := http.NewRequest("PUT", l.url+"/traps/anon", strings.NewReader("x"))
	resp, _ = http.DefaultClient.Do(req)
	if e := readError(t, resp); e.Code != "AccessDenied" {
		t.Fatalf("anonymous PUT: %+v", e)
	}
	c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("traps"), ACL: "private"})

	// Expect: 100-continue, then a body; and a refused one gets its answer
	// before the body is sent.
	body := bytes.Repeat([]byte("e"), 1<<20)
	r := l.signed(t, "PUT", "/traps/expect", body, map[string]string{"Expect": "100-continue"}, rootAK, rootSK, time.Now())
	tr := &http.Transport{ExpectContinueTimeout: 5 * time.Second}
	resp, err = (&http.Client{Transport: tr}).Do(r)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("100-continue PUT: %v %v", err, resp)
	}
	resp.Body.Close()
	if got := mustGet(t, c, "traps", "expect"); !bytes.Equal(got, body) {
		t.Fatal("100-continue body differs")
	}
	// 5 GiB single-PUT limit: refused from the header, before any byte.
	conn, err := net.Dial("tcp", strings.TrimPrefix(l.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	big := l.signed(t, "PUT", "/traps/huge", nil, map[string]string{"Expect": "100-continue"}, rootAK, rootSK, time.Now())
	big.Header.Set("X-Amz-Content-Sha256", unsignedPayload)
	s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	big.ContentLength = 5<<30 + 1
	big.Header.Set("Content-Length", fmt.Sprint(big.ContentLength))
	s.SignHTTP(ctx, aws.Credentials{AccessKeyID: rootAK, SecretAccessKey: rootSK}, big, unsignedPayload, "s3", "us-east-1", time.Now())
	fmt.Fprintf(conn, "PUT /traps/huge HTTP/1.1\r\nHost: %s\r\n", big.Host)
	for k, vs := range big.Header {
		fmt.Fprintf(conn, "%s: %s\r\n", k, vs[0])
	}
	fmt.Fprintf(conn, "\r\n")
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := readError(t, resp); e.Code != "EntityTooLarge" {
		t.Fatalf("5 GiB + 1 PUT: %d %+v", resp.StatusCode, e)
	}
	conn.Close()

	// Virtual-host-style addressing (bucket.localhost).
	vh := l.sdk(t, rootAK, rootSK, func(o *s3.Options) {
		o.UsePathStyle = false
		o.BaseEndpoint = aws.String(strings.Replace(l.url, "127.0.0.1", "localhost", 1))
		o.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+port)
		}}}
	})
	if _, err := vh.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("traps"), Key: aws.String("vhost/key"), Body: strings.NewReader("vh")}); err != nil {
		t.Fatalf("virtual-host PUT: %v", err)
	}
	if got := mustGet(t, c, "traps", "vhost/key"); string(got) != "vh" {
		t.Fatalf("virtual-host object: %q", got)
	}
	lo, err := vh.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("traps"), Prefix: aws.String("vhost/")})
	if err != nil || len(lo.Contents) != 1 {
		t.Fatalf("virtual-host list: %v %+v", err, lo)
	}

	// Presigned GET and PUT through plain net/http, and expiry.
	ps := s3.NewPresignClient(c)
	pput, err := ps.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("traps"), Key: aws.String("pre signed+key")}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest("PUT", pput.URL, strings.NewReader("via presigned put"))
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("presigned PUT: %v %v", err, readError(t, resp))
	}
	pget, _ := ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("traps"), Key: aws.String("pre signed+key")}, s3.WithPresignExpires(time.Minute))
	resp, err = http.Get(pget.URL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("presigned GET: %v %v", err, resp)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "via presigned put" {
		t.Fatalf("presigned GET body %q", b)
	}
	old, _ := ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("traps"), Key: aws.String("pre signed+key")}, func(o *s3.PresignOptions) {
		o.Expires = time.Second
		o.Presigner = presignAt{o.Presigner, time.Now().Add(-time.Minute)}
	})
	resp, _ = http.Get(old.URL)
	if e := readError(t, resp); e.Code != "AccessDenied" || !strings.Contains(e.Message, "expired") {
		t.Fatalf("expired presigned GET: %+v", e)
	}

	// DeleteObjects, quiet and not.
	for i := 0; i < 5; i++ {
		mustPut(t, c, "traps", fmt.Sprintf("del/%d", i), []byte("x"))
	}
	do, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("traps"), Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{
		{Key: aws.String("del/0")}, {Key: aws.String("del/1")}, {Key: aws.String("del/none")}, {Key: aws.String("bad//key")}}}})
	if err != nil || len(do.Deleted) != 3 || len(do.Errors) != 1 || *do.Errors[0].Code != "InvalidArgument" {
		t.Fatalf("delete objects: %v %+v", err, do)
	}
	do, err = c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("traps"), Delete: &s3types.Delete{Quiet: aws.Bool(true), Objects: []s3types.ObjectIdentifier{
		{Key: aws.String("del/2")}, {Key: aws.String("del/3")}, {Key: aws.String("del/4")}}}})
	if err != nil || len(do.Deleted) != 0 || len(do.Errors) != 0 {
		t.Fatalf("quiet delete objects: %v %+v", err, do)
	}
	// Malformed XML.
	resp, _ = http.DefaultClient.Do(l.signed(t, "POST", "/traps?delete", []byte("<Delete><Object>"), nil, rootAK, rootSK, time.Now()))
	if e := readError(t, resp); e.Code != "MalformedXML" {
		t.Fatalf("malformed XML: %+v", e)
	}
	// Metrics per operation.
	resp, _ = http.Get(l.url + "/_flyfs/metrics")
	mb, _ := io.ReadAll(resp.Body)
	if !bytes.Contains(mb, []byte(`flyfs_s3_requests_total{op="PutObject",status="200"}`)) {
		t.Fatalf("metrics: %s", mb)
	}
}

// presignAt signs as if at another time (for expiry tests).
type presignAt struct {
	p  s3.HTTPPresignerV4
	at time.Time
}

func (p presignAt) PresignHTTP(ctx context.Context, cr aws.Credentials, r *http.Request, payloadHash, service, region string, _ time.Time, opts ...func(*v4.SignerOptions)) (string, http.Header, error) {
	return p.p.PresignHTTP(ctx, cr, r, payloadHash, service, region, p.at, opts...)
}

func TestLiveAccessKeys(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "keys-a")
	mustBucket(t, c, "keys-b")
	mustPut(t, c, "keys-b", "obj", []byte("b"))
	k, err := l.fs.Keys().Create(ctx, access.Key{UID: 1234, GID: 5678, Buckets: map[string]access.Permission{"keys-a": access.ReadWrite, "keys-b": access.Read}})
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	kc := l.sdk(t, k.ID, k.Secret)
	mustPut(t, kc, "keys-a", "mine", []byte("a"))
	in, _ := l.fs.Meta().Resolve(ctx, "/keys-a/mine", false)
	if in.UID != 1234 || in.GID != 5678 {
		t.Fatalf("owner %d:%d, want the key's 1234:5678", in.UID, in.GID)
	}
	if got := mustGet(t, kc, "keys-b", "obj"); string(got) != "b" {
		t.Fatal("read on a read bucket")
	}
	if _, err := kc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("keys-b"), Key: aws.String("x"), Body: strings.NewReader("x")}); errCodeOf(err) != "AccessDenied" {
		t.Fatalf("write on a read bucket: %v", err)
	}
	if _, err := kc.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("keys-c")}); errCodeOf(err) != "AccessDenied" {
		t.Fatalf("create bucket without *: %v", err)
	}
	lb, _ := kc.ListBuckets(ctx, &s3.ListBucketsInput{})
	if len(lb.Buckets) != 2 {
		t.Fatalf("buckets seen: %+v", lb.Buckets)
	}
	if err := l.fs.Keys().Revoke(ctx, k.ID); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if _, err := kc.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("keys-b"), Key: aws.String("obj")}); errCodeOf(err) != "InvalidAccessKeyId" {
		t.Fatalf("revoked key: %v", err)
	}
}

func TestLiveMinioClient(t *testing.T) {
	l := startGW(t)
	mc, err := minio.New(strings.TrimPrefix(l.url, "http://"), &minio.Options{Creds: miniocreds.NewStaticV4(rootAK, rootSK, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := mc.MakeBucket(ctx, "minio", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	// minio-go streams signed aws-chunked payloads over plain HTTP.
	data := randBytes(7<<20 + 3)
	if _, err := mc.PutObject(ctx, "minio", "dir/streamed", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{UserMetadata: map[string]string{"k": "v"}, ContentType: "a/b"}); err != nil {
		t.Fatal(err)
	}
	// Unknown size: minio-go uploads in parts.
	if _, err := mc.PutObject(ctx, "minio", "dir/parts", io.LimitReader(bytes.NewReader(append(data, data...)), int64(2*len(data))), -1, minio.PutObjectOptions{PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string][]byte{"dir/streamed": data, "dir/parts": append(data, data...)} {
		o, err := mc.GetObject(ctx, "minio", key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(o)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %v, %d bytes", key, err, len(got))
		}
	}
	st, err := mc.StatObject(ctx, "minio", "dir/streamed", minio.StatObjectOptions{})
	if err != nil || st.UserMetadata["K"] != "v" || st.ContentType != "a/b" {
		t.Fatalf("stat: %v %+v", err, st)
	}
	var keys []string
	for o := range mc.ListObjects(ctx, "minio", minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	if strings.Join(keys, ",") != "dir/parts,dir/streamed" {
		t.Fatalf("list: %v", keys)
	}
	if _, err := mc.CopyObject(ctx, minio.CopyDestOptions{Bucket: "minio", Object: "copy"}, minio.CopySrcOptions{Bucket: "minio", Object: "dir/streamed"}); err != nil {
		t.Fatal(err)
	}
	for e := range mc.RemoveObjects(ctx, "minio", func() <-chan minio.ObjectInfo {
		ch := make(chan minio.ObjectInfo, 3)
		for _, k := range []string{"dir/parts", "dir/streamed", "copy"} {
			ch <- minio.ObjectInfo{Key: k}
		}
		close(ch)
		return ch
	}(), minio.RemoveObjectsOptions{}) {
		t.Fatalf("remove: %v", e.Err)
	}
	if err := mc.RemoveBucket(ctx, "minio"); err != nil {
		t.Fatal(err)
	}
	// Presigned through minio-go too.
	mc.MakeBucket(ctx, "minio2", minio.MakeBucketOptions{})
	u, err := mc.PresignedPutObject(ctx, "minio2", "p", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("PUT", u.String(), strings.NewReader("pp"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("minio presigned PUT: %v %v", err, resp)
	}
	_ = credentials.NewStaticCredentialsProvider
}

// A copy source is checked as any read of it: a top-level directory that is
// not a bucket (a POSIX user's, or one whose name S3 refuses) and the
// gateway's staging area are no source, even for a key that may read every
// bucket.
func TestLiveCopySourceMustBeABucket(t *testing.T) {
	l := startGW(t)
	ctx := context.Background()
	root := l.root(t)
	mustBucket(t, root, "dst")
	mustBucket(t, root, "src")
	mustPut(t, root, "src", "ok.txt", []byte("public"))
	if err := l.fs.MkdirAll(ctx, "/Private_Data", 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := l.fs.Create(ctx, "/Private_Data/secret.txt", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("secret"), 0)
	f.Close()
	k, err := l.fs.Keys().Create(ctx, access.Key{Buckets: map[string]access.Permission{"*": access.Read, "dst": access.ReadWrite}})
	if err != nil {
		t.Fatal(err)
	}
	kc := l.sdk(t, k.ID, k.Secret)
	up, err := kc.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("dst"), Key: aws.String("parts")})
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"Private_Data/secret.txt", ".flyfs-s3/staging/x", "src/../Private_Data/secret.txt", "src/%2e%2e/Private_Data/secret.txt"} {
		_, err := kc.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("stolen"), CopySource: aws.String(src)})
		if err == nil {
			t.Errorf("CopyObject from %q was accepted", src)
		}
		_, err = kc.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("dst"), Key: aws.String("parts"), UploadId: up.UploadId,
			PartNumber: aws.Int32(1), CopySource: aws.String(src)})
		if err == nil {
			t.Errorf("UploadPartCopy from %q was accepted", src)
		}
	}
	if _, err := kc.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String("stolen")}); errCodeOf(err) != "NotFound" {
		t.Errorf("something was copied: %v", err)
	}
	if _, err := kc.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("fine"), CopySource: aws.String("src/ok.txt")}); err != nil {
		t.Errorf("a copy from a bucket the key may read: %v", err)
	}
	if _, err := kc.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("x"), CopySource: aws.String("Private_Data/secret.txt")}); errCodeOf(err) != "NoSuchBucket" {
		t.Errorf("a non-bucket source answers %q, want NoSuchBucket", errCodeOf(err))
	}
}
