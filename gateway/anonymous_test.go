package gateway

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestLiveAnonymousResponseOverrides: an anonymous GET or HEAD of a
// public-read bucket cannot choose the response's headers (a page served
// as text/html from someone else's bucket); S3 refuses response-*
// overrides on anonymous requests. Signed and presigned requests keep
// them.
func TestLiveAnonymousResponseOverrides(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "anonpub")
	mustPut(t, c, "anonpub", "page", []byte("<script>alert(1)</script>"))
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("anonpub"), ACL: "public-read"}); err != nil {
		t.Fatal(err)
	}
	const msg = "Request specific response headers cannot be used for anonymous GET requests."
	for _, p := range []string{"response-content-type", "response-content-disposition", "response-content-encoding",
		"response-content-language", "response-cache-control", "response-expires"} {
		for _, method := range []string{"GET", "HEAD"} {
			req, _ := http.NewRequest(method, l.url+"/anonpub/page?"+p+"="+url.QueryEscape("text/html"), nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			e := readError(t, resp)
			if resp.StatusCode != 400 || (method == "GET" && (e.Code != "InvalidRequest" || e.Message != msg)) {
				t.Errorf("anonymous %s ?%s: %d %+v, want 400 InvalidRequest %q", method, p, resp.StatusCode, e, msg)
			}
			if ct := resp.Header.Get("Content-Type"); ct == "text/html" {
				t.Errorf("anonymous %s ?%s: served as %s", method, p, ct)
			}
		}
	}
	// Without an override the public object reads as before.
	resp, err := http.Get(l.url + "/anonpub/page")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "<script>alert(1)</script>" || resp.Header.Get("Content-Type") == "text/html" {
		t.Fatalf("anonymous GET: %d %q %s", resp.StatusCode, b, resp.Header.Get("Content-Type"))
	}
	// A signed request may override, and so may a presigned URL.
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("anonpub"), Key: aws.String("page"), ResponseContentType: aws.String("text/plain")})
	if err != nil || aws.ToString(out.ContentType) != "text/plain" {
		t.Fatalf("signed GET with an override: %v %+v", err, out)
	}
	out.Body.Close()
	ps, err := s3.NewPresignClient(c).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("anonpub"), Key: aws.String("page"),
		ResponseContentDisposition: aws.String("attachment")}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(ps.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Disposition") != "attachment" {
		t.Fatalf("presigned GET with an override: %d %v", resp.StatusCode, resp.Header)
	}
}
