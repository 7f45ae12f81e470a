package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"io"
	"mime/multipart"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/encrypt"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestPostPolicy is the policy language case by case: a document, the
// form's fields, and the error code (and a word of its message) expected.
func TestPostPolicy(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const later = `"expiration": "2026-12-01T13:00:00.000Z"`
	for _, tc := range []struct {
		name, doc string
		fields    map[string]string
		code, msg string
	}{
		{"exact match", `{` + later + `, "conditions": [{"bucket": "b"}, {"key": "k"}]}`, map[string]string{"key": "k"}, "", ""},
		{"eq is exact", `{` + later + `, "conditions": [["eq", "$key", "k"]]}`, map[string]string{"key": "K"}, "AccessDenied", `["eq", "$key", "k"]`},
		{"names are case-insensitive", `{` + later + `, "conditions": [["eq", "$Content-Type", "text/plain"]]}`, map[string]string{"content-type": "text/plain"}, "", ""},
		{"starts-with", `{` + later + `, "conditions": [["starts-with", "$key", "user/"]]}`, map[string]string{"key": "user/a"}, "", ""},
		{"starts-with fails", `{` + later + `, "conditions": [["starts-with", "$key", "user/"]]}`, map[string]string{"key": "other/a"}, "AccessDenied", "Policy Condition failed"},
		{"starts-with empty: any value", `{` + later + `, "conditions": [["starts-with", "$key", ""]]}`, map[string]string{"key": "x"}, "", ""},
		{"a condition on a field the form lacks", `{` + later + `, "conditions": [{"key": "k"}, {"success_action_status": "201"}]}`, map[string]string{"key": "k"}, "AccessDenied", "no success_action_status"},
		{"the URL's bucket", `{` + later + `, "conditions": [{"bucket": "other"}]}`, map[string]string{}, "AccessDenied", "bucket"},
		{"a field no condition names", `{` + later + `, "conditions": [{"key": "k"}]}`, map[string]string{"key": "k", "x-amz-meta-a": "1"}, "AccessDenied", "Extra input fields: x-amz-meta-a"},
		{"exempt fields", `{` + later + `, "conditions": [{"key": "k"}]}`, map[string]string{"key": "k", "policy": "p", "x-amz-signature": "s", "x-ignore-me": "1"}, "", ""},
		{"expired", `{"expiration": "2026-12-01T11:59:59Z", "conditions": []}`, map[string]string{}, "AccessDenied", "Policy expired"},
		{"no expiration", `{"conditions": []}`, nil, "InvalidPolicyDocument", "expiration"},
		{"bad expiration", `{"expiration": "tomorrow", "conditions": []}`, nil, "InvalidPolicyDocument", "ISO 8601"},
		{"not JSON", `expiration`, nil, "InvalidPolicyDocument", "JSON"},
		{"two pairs in one object", `{` + later + `, "conditions": [{"a": "1", "b": "2"}]}`, nil, "InvalidPolicyDocument", "one"},
		{"a number for a string", `{` + later + `, "conditions": [{"a": 1}]}`, nil, "InvalidPolicyDocument", "string"},
		{"an unknown operator", `{` + later + `, "conditions": [["ends-with", "$key", "x"]]}`, nil, "InvalidPolicyDocument", "ends-with"},
		{"a field without $", `{` + later + `, "conditions": [["eq", "key", "x"]]}`, nil, "InvalidPolicyDocument", "$field"},
		{"two elements", `{` + later + `, "conditions": [["eq", "$key"]]}`, nil, "InvalidPolicyDocument", "three"},
		{"range as strings", `{` + later + `, "conditions": [["content-length-range", "1", "10"]]}`, map[string]string{}, "", ""},
		{"range reversed", `{` + later + `, "conditions": [["content-length-range", 10, 1]]}`, nil, "InvalidPolicyDocument", "min <= max"},
		{"range negative", `{` + later + `, "conditions": [["content-length-range", -1, 1]]}`, nil, "InvalidPolicyDocument", "min <= max"},
		{"two ranges", `{` + later + `, "conditions": [["content-length-range", 1, 2], ["content-length-range", 1, 3]]}`, nil, "InvalidPolicyDocument", "one"},
		{"a string condition", `{` + later + `, "conditions": ["key"]}`, nil, "InvalidPolicyDocument", "neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parsePostPolicy(b64(tc.doc))
			if err == nil {
				err = p.check(tc.fields, "b", now)
			}
			ae := toAPIError(err)
			if err == nil && tc.code == "" {
				return
			}
			if err == nil || ae.Code != tc.code || !strings.Contains(ae.Message, tc.msg) {
				t.Fatalf("got %v, want %s containing %q", err, tc.code, tc.msg)
			}
		})
	}
	if _, err := parsePostPolicy("!!"); toAPIError(err).Code != "InvalidPolicyDocument" {
		t.Errorf("bad base64: %v", err)
	}
	p, err := parsePostPolicy(b64(`{` + later + `, "conditions": [["content-length-range", 2, 4]]}`))
	if err != nil {
		t.Fatal(err)
	}
	for n, code := range map[int64]string{1: "EntityTooSmall", 2: "", 4: "", 5: "EntityTooLarge"} {
		if got := toAPIError(p.lengthOK(n)); (code == "" && p.lengthOK(n) != nil) || (code != "" && got.Code != code) {
			t.Errorf("length %d: %v, want %q", n, p.lengthOK(n), code)
		}
	}
}

// postFile posts a form (fields in the order given, then the file) and
// returns the response.
func postFile(t testing.TB, url string, fields map[string]string, fileName string, file []byte) *http.Response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		mw.WriteField(k, fields[k])
	}
	fw, err := mw.CreateFormFile("file", fileName)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(file)
	mw.Close()
	req, _ := http.NewRequest("POST", url, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestLivePostObject: browser form uploads signed by minio-go's
// PresignedPostPolicy, with what each success_action asks for, the
// object's headers and metadata from the form, and every refusal storing
// nothing.
func TestLivePostObject(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "forms")
	mc, err := minio.New(strings.TrimPrefix(l.url, "http://"), &minio.Options{Creds: miniocreds.NewStaticV4(rootAK, rootSK, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	presign := func(mod func(p *minio.PostPolicy)) (string, map[string]string) {
		t.Helper()
		p := minio.NewPostPolicy()
		p.SetBucket("forms")
		p.SetKeyStartsWith("uploads/")
		p.SetExpires(time.Now().UTC().Add(time.Hour))
		p.SetContentLengthRange(1, 1<<20)
		if mod != nil {
			mod(p)
		}
		u, fd, err := mc.PresignedPostPolicy(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return u.String(), fd
	}

	// The default answer is 204, with the ETag and the object's location.
	u, fd := presign(func(p *minio.PostPolicy) {
		p.SetContentType("text/plain")
		p.SetUserMetadata("owner", "alice")
	})
	fd["key"] = "uploads/${filename}"
	data := randBytes(70 << 10)
	resp := postFile(t, u, fd, "report.txt", data)
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("ETag") == "" || !strings.HasSuffix(resp.Header.Get("Location"), "/forms/uploads/report.txt") {
		t.Fatalf("POST: %d %v", resp.StatusCode, resp.Header)
	}
	if got := mustGet(t, c, "forms", "uploads/report.txt"); !bytes.Equal(got, data) {
		t.Fatalf("the posted object reads back %d bytes, not the %d sent", len(got), len(data))
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("forms"), Key: aws.String("uploads/report.txt")})
	if err != nil || aws.ToString(h.ContentType) != "text/plain" || h.Metadata["owner"] != "alice" || aws.ToString(h.ETag) != resp.Header.Get("ETag") {
		t.Fatalf("head: %v %+v", err, h)
	}

	// 201: a PostResponse document.
	u, fd = presign(func(p *minio.PostPolicy) { p.SetSuccessStatusAction("201") })
	fd["key"] = "uploads/two"
	resp = postFile(t, u, fd, "x", []byte("two"))
	var pr postResponse
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || xml.Unmarshal(b, &pr) != nil || pr.Bucket != "forms" || pr.Key != "uploads/two" || pr.ETag == "" {
		t.Fatalf("201: %d %s", resp.StatusCode, b)
	}

	// A redirect: 303 to the page, told the bucket, key and ETag.
	u, fd = presign(func(p *minio.PostPolicy) { p.SetSuccessActionRedirect("http://app.example/done?x=1") })
	fd["key"] = "uploads/three"
	resp = postFile(t, u, fd, "x", []byte("three"))
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != 303 || !strings.HasPrefix(loc, "http://app.example/done?") ||
		!strings.Contains(loc, "key=uploads%2Fthree") || !strings.Contains(loc, "bucket=forms") || !strings.Contains(loc, "x=1") {
		t.Fatalf("redirect: %d %q", resp.StatusCode, loc)
	}

	// Refusals: none stores anything.
	expired := func(p *minio.PostPolicy) { p.SetExpires(time.Now().UTC().Add(-time.Minute)) }
	for _, tc := range []struct {
		name   string
		mod    func(*minio.PostPolicy)
		change func(fd map[string]string)
		file   []byte
		status int
		code   string
		msg    string
	}{
		{"a key outside the prefix", nil, func(fd map[string]string) { fd["key"] = "elsewhere/x" }, []byte("x"), 403, "AccessDenied", "starts-with"},
		{"expired", expired, nil, []byte("x"), 403, "AccessDenied", "expired"},
		{"too large", nil, nil, make([]byte, 1<<20+1), 400, "EntityTooLarge", "content-length-range"},
		{"too small", nil, nil, nil, 400, "EntityTooSmall", "at least 1"},
		{"a field the policy does not name", nil, func(fd map[string]string) { fd["x-amz-meta-extra"] = "1" }, []byte("x"), 403, "AccessDenied", "x-amz-meta-extra"},
		{"a tampered policy", nil, func(fd map[string]string) {
			raw, _ := base64.StdEncoding.DecodeString(fd["policy"])
			fd["policy"] = b64(strings.Replace(string(raw), "uploads/", "", 1))
		}, []byte("x"), 403, "SignatureDoesNotMatch", "signature"},
		{"a wrong secret", nil, func(fd map[string]string) { fd["x-amz-signature"] = strings.Repeat("0", 64) }, []byte("x"), 403, "SignatureDoesNotMatch", ""},
		{"anonymous", nil, func(fd map[string]string) {
			for _, k := range []string{"policy", "x-amz-signature", "x-amz-credential", "x-amz-algorithm", "x-amz-date"} {
				delete(fd, k)
			}
		}, []byte("x"), 403, "AccessDenied", "Anonymous access is refused"},
		{"SSE in the policy", func(p *minio.PostPolicy) { p.SetUserData("server-side-encryption", "AES256") }, nil, []byte("x"), 501, "NotImplemented", "encryption"},
		{"SSE-C beside it", func(p *minio.PostPolicy) {
			p.SetEncryption(encrypt.DefaultPBKDF([]byte("pw"), []byte("forms/uploads/refused")))
		}, nil, []byte("x"), 501, "NotImplemented", "customer-provided key"},
		{"an ACL the policy does not name", nil, func(fd map[string]string) { fd["acl"] = "public-read" }, []byte("x"), 403, "AccessDenied", "Extra input fields: acl"},
		{"another bucket in the form", nil, func(fd map[string]string) { fd["bucket"] = "other" }, []byte("x"), 400, "InvalidArgument", "bucket field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, fd := presign(tc.mod)
			fd["key"] = "uploads/refused"
			if tc.change != nil {
				tc.change(fd)
			}
			resp := postFile(t, u, fd, "f", tc.file)
			e := readError(t, resp)
			if resp.StatusCode != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Fatalf("%d %+v, want %d %s containing %q", resp.StatusCode, e, tc.status, tc.code, tc.msg)
			}
		})
	}
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("forms")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	if want := []string{"uploads/report.txt", "uploads/three", "uploads/two"}; !slices.Equal(keys, want) {
		t.Fatalf("objects %q, want %q: a refused POST stored something", keys, want)
	}
	// A form without a file, and a POST that is no form.
	u, fd = presign(nil)
	fd["key"] = "uploads/nofile"
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range fd {
		mw.WriteField(k, v)
	}
	mw.Close()
	resp, err = http.Post(u, mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	if e := readError(t, resp); resp.StatusCode != 400 || e.Code != "IncorrectNumberOfFilesInPostRequest" {
		t.Errorf("no file: %d %+v", resp.StatusCode, e)
	}
	resp, err = http.Post(u, "application/octet-stream", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	if e := readError(t, resp); resp.StatusCode != 412 || !strings.Contains(e.Message, "multipart/form-data") {
		t.Errorf("not a form: %d %+v", resp.StatusCode, e)
	}

	// An unsigned form is anonymous: a public-read-write bucket takes it.
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("openforms"), ACL: types.BucketCannedACLPublicReadWrite}); err != nil {
		t.Fatal(err)
	}
	resp = postFile(t, l.url+"/openforms", map[string]string{"key": "anon/${filename}", "Content-Type": "text/plain"}, "a.txt", []byte("anonymous"))
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("an unsigned form to a public-read-write bucket: %d", resp.StatusCode)
	}
	if got := mustGet(t, c, "openforms", "anon/a.txt"); string(got) != "anonymous" {
		t.Fatalf("the anonymous upload: %q", got)
	}

	// SigV2 forms (minio-go with V2 credentials) are refused naming the fix.
	mc2, err := minio.New(strings.TrimPrefix(l.url, "http://"), &minio.Options{Creds: miniocreds.NewStaticV2(rootAK, rootSK, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	p := minio.NewPostPolicy()
	p.SetBucket("forms")
	p.SetKey("uploads/v2")
	p.SetExpires(time.Now().UTC().Add(time.Hour))
	u2, fd2, err := mc2.PresignedPostPolicy(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	resp = postFile(t, u2.String(), fd2, "f", []byte("v2"))
	if e := readError(t, resp); resp.StatusCode != 400 || e.Code != "InvalidRequest" || !strings.Contains(e.Message, "SigV4") {
		t.Errorf("SigV2 form: %d %+v", resp.StatusCode, e)
	}
}

// TestLiveBoto3Presigned: boto3 (the Debian package, 1.26) as a web
// back end uses it: generate_presigned_post for a form the browser posts,
// and presigned GET URLs, SigV4 readable, SigV2 (boto3 1.26's default)
// refused with the fix.
func TestLiveBoto3Presigned(t *testing.T) {
	py := need(t, "/usr/bin/python3")
	if exec.Command(py, "-c", "import boto3").Run() != nil {
		t.Skip("boto3 is not installed (Debian package python3-boto3); skipping")
	}
	l := startGW(t)
	c := l.root(t)
	mustBucket(t, c, "boto")
	mustPut(t, c, "boto", "existing", []byte("hello"))
	script := `
import boto3, json, sys
from botocore.config import Config
def client(sig):
    return boto3.session.Session().client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
        aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3], config=Config(signature_version=sig, s3={"addressing_style": "path"}))
post = client("s3v4").generate_presigned_post("boto", "in/${filename}", Fields={"success_action_status": "201"},
    Conditions=[["starts-with", "$key", "in/"], {"success_action_status": "201"}, ["content-length-range", 1, 1000]], ExpiresIn=600)
v4 = client("s3v4").generate_presigned_url("get_object", Params={"Bucket": "boto", "Key": "existing"}, ExpiresIn=600)
v2 = client(None).generate_presigned_url("get_object", Params={"Bucket": "boto", "Key": "existing"}, ExpiresIn=600)
print(json.dumps({"post": post, "v4": v4, "v2": v2}))
`
	out := run(t, []string{"AWS_CA_BUNDLE=", "HOME=" + t.TempDir()}, py, "-c", script, l.url, rootAK, rootSK)
	var res struct {
		Post struct {
			URL    string
			Fields map[string]string
		}
		V4, V2 string
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	resp := postFile(t, res.Post.URL, res.Post.Fields, "photo.jpg", []byte("jpeg bytes"))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || !strings.Contains(string(b), "<Key>in/photo.jpg</Key>") {
		t.Fatalf("boto3 presigned POST: %d %s", resp.StatusCode, b)
	}
	if got := mustGet(t, c, "boto", "in/photo.jpg"); string(got) != "jpeg bytes" {
		t.Fatalf("posted object: %q", got)
	}
	resp, err := http.Get(res.V4)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "hello" {
		t.Fatalf("SigV4 presigned GET: %d %s", resp.StatusCode, b)
	}
	if !strings.Contains(res.V2, "AWSAccessKeyId=") {
		t.Fatalf("boto3 1.26's default presigned URL is not SigV2 here: %s", res.V2)
	}
	resp, err = http.Get(res.V2)
	if err != nil {
		t.Fatal(err)
	}
	if e := readError(t, resp); resp.StatusCode != 400 || e.Code != "InvalidRequest" || !strings.Contains(e.Message, "Signature Version 2") {
		t.Fatalf("SigV2 presigned GET: %d %+v", resp.StatusCode, e)
	}
}
