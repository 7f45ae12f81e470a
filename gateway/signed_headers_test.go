package gateway

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// A signature covers what it authorizes: every x-amz-* header of a request
// and Content-MD5 must be among the signed headers, for header auth and for
// presigned URLs alike, else the request is refused with AccessDenied.

// operationHeaders are headers that select or change an operation, each
// with a value that would be honoured if it were signed.
func operationHeaders(body []byte) map[string]string {
	md := md5.Sum(body)
	var crc [4]byte
	binary.BigEndian.PutUint32(crc[:], crc32.ChecksumIEEE(body))
	return map[string]string{
		"X-Amz-Copy-Source":               "shsrc/secret.txt",
		"X-Amz-Meta-Color":                "red",
		"X-Amz-Tagging":                   "stolen=yes",
		"X-Amz-Acl":                       "public-read",
		"X-Amz-Storage-Class":             "STANDARD",
		"X-Amz-Server-Side-Encryption":    "AES256",
		"X-Amz-Website-Redirect-Location": "/elsewhere",
		"X-Amz-Checksum-Crc32":            base64.StdEncoding.EncodeToString(crc[:]),
		"X-Amz-Checksum-Sha256":           base64.StdEncoding.EncodeToString(sha256Sum(body)),
		"Content-Md5":                     base64.StdEncoding.EncodeToString(md[:]),
	}
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// presignReq presigns method target with the SDK's signer, the headers of
// signed among the signed headers, and returns the request a client of the
// URL sends (with those headers).
func presignReq(t testing.TB, method, target string, signed map[string]string, body []byte, ak, sk string, at time.Time) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := r.URL.Query()
	q.Set("X-Amz-Expires", "300")
	r.URL.RawQuery = q.Encode()
	for k, v := range signed {
		r.Header.Set(k, v)
	}
	s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	u, sh, err := s.PresignHTTP(context.Background(), aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk}, r, unsignedPayload, "s3", "us-east-1", at)
	if err != nil {
		t.Fatal(err)
	}
	out, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range sh {
		if !strings.EqualFold(k, "host") {
			out.Header[k] = vs
		}
	}
	return out
}

func wantUnsignedRefused(t *testing.T, what string, err error, header string) {
	t.Helper()
	ae := toAPIError(err)
	if err == nil || ae.Code != "AccessDenied" || ae.Status != http.StatusForbidden || !strings.Contains(ae.Message, strings.ToLower(header)) {
		t.Errorf("%s with an unsigned %s: %v, want AccessDenied naming it", what, header, err)
	}
}

func TestUnsignedHeadersRefused(t *testing.T) {
	now := time.Now().UTC()
	body := []byte("payload")
	const target = "http://127.0.0.1:9300/dst/obj"
	for name, value := range operationHeaders(body) {
		// Header auth: added after signing.
		r := sdkSigned(t, "PUT", target, nil, unsignedPayload, now)
		if err := verify(r, now, testCreds.SecretAccessKey); err != nil {
			t.Fatalf("header auth without %s: %v", name, err)
		}
		r.Header.Set(name, value)
		wantUnsignedRefused(t, "header auth", verify(r, now, testCreds.SecretAccessKey), name)
		// Header auth, signed: fine.
		r = sdkSigned(t, "PUT", target, map[string]string{name: value}, unsignedPayload, now)
		if err := verify(r, now, testCreds.SecretAccessKey); err != nil {
			t.Errorf("header auth with a signed %s: %v", name, err)
		}

		// Presigned: added to the URL's request.
		p := presignReq(t, "PUT", target, nil, body, testCreds.AccessKeyID, testCreds.SecretAccessKey, now)
		if err := verify(p, now, testCreds.SecretAccessKey); err != nil {
			t.Fatalf("presigned without %s: %v", name, err)
		}
		p.Header.Set(name, value)
		wantUnsignedRefused(t, "presigned", verify(p, now, testCreds.SecretAccessKey), name)
		// Presigned with the header signed: fine.
		p = presignReq(t, "PUT", target, map[string]string{name: value}, body, testCreds.AccessKeyID, testCreds.SecretAccessKey, now)
		if !strings.Contains(p.URL.Query().Get("X-Amz-SignedHeaders"), strings.ToLower(name)) {
			t.Fatalf("the SDK did not sign %s: %s", name, p.URL.RawQuery)
		}
		if err := verify(p, now, testCreds.SecretAccessKey); err != nil {
			t.Errorf("presigned with a signed %s: %v", name, err)
		}
	}
	// Any x-amz-* header, known or not, and its case does not matter.
	for _, name := range []string{"x-amz-tagging-directive", "X-AMZ-METADATA-DIRECTIVE", "X-Amz-Copy-Source-Range", "X-Amz-Whatever", "x-amz-date"} {
		p := presignReq(t, "PUT", target, nil, body, testCreds.AccessKeyID, testCreds.SecretAccessKey, now)
		p.Header[name] = []string{"x"}
		wantUnsignedRefused(t, "presigned", verify(p, now, testCreds.SecretAccessKey), name)
		if name == "x-amz-date" {
			continue // signed in header auth; unsigned below
		}
		r := sdkSigned(t, "PUT", target, nil, unsignedPayload, now)
		r.Header[name] = []string{"x"}
		wantUnsignedRefused(t, "header auth", verify(r, now, testCreds.SecretAccessKey), name)
	}
	// Every unsigned header is named.
	r := sdkSigned(t, "PUT", target, nil, unsignedPayload, now)
	r.Header.Set("X-Amz-Meta-A", "1")
	r.Header.Set("X-Amz-Copy-Source", "b/k")
	err := verify(r, now, testCreds.SecretAccessKey)
	if m := toAPIError(err).Message; !strings.Contains(m, "x-amz-meta-a") || !strings.Contains(m, "x-amz-copy-source") {
		t.Errorf("two unsigned headers: %v", err)
	}
	// A second value of a signed header is covered (it changes the signed
	// value, so the signature no longer matches).
	r = sdkSigned(t, "PUT", target, map[string]string{"X-Amz-Meta-A": "1"}, unsignedPayload, now)
	r.Header.Add("X-Amz-Meta-A", "2")
	if err := verify(r, now, testCreds.SecretAccessKey); apiCode(err) != "SignatureDoesNotMatch" {
		t.Errorf("a second value of a signed header: %v", err)
	}
	// Headers that are not x-amz-* nor Content-MD5 may go unsigned (as SDKs
	// leave User-Agent, Expect, X-Amzn-Trace-Id unsigned).
	r = sdkSigned(t, "PUT", target, nil, unsignedPayload, now)
	for _, h := range []string{"User-Agent", "Expect", "X-Amzn-Trace-Id", "Content-Type", "Amz-Sdk-Request"} {
		r.Header.Set(h, "x")
	}
	if err := verify(r, now, testCreds.SecretAccessKey); err != nil {
		t.Errorf("unsigned ordinary headers: %v", err)
	}
	// Header auth: x-amz-content-sha256 and x-amz-date must be signed too.
	for _, h := range []string{"X-Amz-Content-Sha256", "X-Amz-Date"} {
		r := httptest.NewRequest("GET", target, nil)
		r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
		s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
		if err := s.SignHTTP(context.Background(), testCreds, r, emptySHA256, "s3", "us-east-1", now); err != nil {
			t.Fatal(err)
		}
		auth := r.Header.Get("Authorization")
		lh := strings.ToLower(h)
		auth = strings.Replace(auth, ";"+lh, "", 1)
		r.Header.Set("Authorization", auth)
		wantUnsignedRefused(t, "header auth", verify(r, now, testCreds.SecretAccessKey), h)
	}
	// Presigned: x-amz-content-sha256 may come unsigned. Its value is the
	// payload hash of the canonical request, so the signature covers it
	// anyway: UNSIGNED-PAYLOAD (what presigned URLs sign) passes, anything
	// else no longer matches.
	p := presignReq(t, "PUT", target, nil, body, testCreds.AccessKeyID, testCreds.SecretAccessKey, now)
	p.Header.Set("X-Amz-Content-Sha256", unsignedPayload)
	if err := verify(p, now, testCreds.SecretAccessKey); err != nil {
		t.Errorf("presigned with an unsigned x-amz-content-sha256 UNSIGNED-PAYLOAD: %v", err)
	}
	for _, v := range []string{streamingUnsignedTrailr, streamingSigned, sha256Hex(body)} {
		p.Header.Set("X-Amz-Content-Sha256", v)
		if err := verify(p, now, testCreds.SecretAccessKey); apiCode(err) != "SignatureDoesNotMatch" {
			t.Errorf("presigned with an unsigned x-amz-content-sha256 %s: %v", v, err)
		}
	}
	// Anonymous requests have no signature to cover anything; their
	// permission check is the bucket's ACL.
	a := httptest.NewRequest("GET", target, nil)
	a.Header.Set("X-Amz-Meta-A", "1")
	if sr, err := parseSigRequest(a); err != nil || sr.kind != authAnonymous {
		t.Errorf("anonymous: %v", err)
	}
}

// SDK-built requests with every kind of header they sign still pass: the
// SDK signs everything it sends but User-Agent, Expect, X-Amzn-Trace-Id,
// Transfer-Encoding and Authorization; presigning hoists x-amz-* headers
// that need not be headers into the query string.
func TestSignedHeadersSDKRequestsPass(t *testing.T) {
	now := time.Now().UTC()
	body := []byte("payload")
	hdr := operationHeaders(body)
	hdr["X-Amz-Tagging-Directive"] = "REPLACE"
	hdr["X-Amz-Metadata-Directive"] = "REPLACE"
	hdr["X-Amz-Copy-Source-Range"] = "bytes=0-1"
	hdr["X-Amz-Decoded-Content-Length"] = "7"
	hdr["X-Amz-Trailer"] = "x-amz-checksum-crc32"
	hdr["X-Amz-Sdk-Checksum-Algorithm"] = "CRC32"
	hdr["X-Amz-Expected-Bucket-Owner"] = "123"
	hdr["User-Agent"] = "aws-sdk-go-v2/1"
	hdr["X-Amzn-Trace-Id"] = "Root=1"
	hdr["Expect"] = "100-continue"
	r := sdkSigned(t, "PUT", "http://127.0.0.1:9300/dst/obj", hdr, unsignedPayload, now)
	if err := verify(r, now, testCreds.SecretAccessKey); err != nil {
		t.Errorf("SDK-signed request with many headers: %v", err)
	}
	p := presignReq(t, "PUT", "http://127.0.0.1:9300/dst/obj", hdr, body, testCreds.AccessKeyID, testCreds.SecretAccessKey, now)
	if q := strings.ToLower(p.URL.RawQuery); !strings.Contains(q, "x-amz-tagging-directive=replace") || !strings.Contains(q, "x-amz-expected-bucket-owner=123") {
		t.Fatalf("the SDK hoisted other headers than expected: %s", p.URL.RawQuery)
	}
	for _, h := range []string{"User-Agent", "X-Amzn-Trace-Id", "Expect"} {
		p.Header.Set(h, hdr[h])
	}
	if err := verify(p, now, testCreds.SecretAccessKey); err != nil {
		t.Errorf("SDK-presigned request with many headers: %v", err)
	}
}

// Live: a presigned PUT URL (or a header-signed PUT) plus an unsigned
// header that would select or change the operation is refused with 403
// AccessDenied and changes nothing.
func TestLiveUnsignedHeadersChangeNothing(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "shsrc")
	mustBucket(t, c, "shdst")
	mustPut(t, c, "shsrc", "secret.txt", []byte("the secret"))
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("shdst"), Key: aws.String("old"), Body: strings.NewReader("original"),
		Metadata: map[string]string{"keep": "1"}}); err != nil {
		t.Fatal(err)
	}
	oldHead, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("shdst"), Key: aws.String("old")})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("attacker's bytes")
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("shdst"), Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	partPath := "/shdst/mp?partNumber=1&uploadId=" + *up.UploadId

	type attempt struct {
		name   string
		path   string            // the signed request's target
		signed map[string]string // headers the signer covered
		extra  map[string]string // headers added afterwards, unsigned
		target string            // a key that must stay absent ("" for none)
	}
	var cases []attempt
	for name, value := range operationHeaders(body) {
		extra := map[string]string{name: value}
		cases = append(cases,
			attempt{"PUT new + " + name, "/shdst/new-" + strings.ToLower(name), nil, extra, "new-" + strings.ToLower(name)},
			attempt{"PUT old + " + name, "/shdst/old", nil, extra, ""})
	}
	copySrc := map[string]string{"X-Amz-Copy-Source": "shsrc/secret.txt"}
	cases = append(cases,
		attempt{"copy + metadata directive", "/shdst/copy-md", copySrc, map[string]string{"X-Amz-Metadata-Directive": "REPLACE"}, "copy-md"},
		attempt{"copy + meta", "/shdst/copy-meta", copySrc, map[string]string{"X-Amz-Meta-Color": "red"}, "copy-meta"},
		attempt{"copy + tagging directive", "/shdst/copy-td", copySrc, map[string]string{"X-Amz-Tagging-Directive": "REPLACE", "X-Amz-Tagging": "a=b"}, "copy-td"},
		attempt{"copy onto old + metadata directive", "/shdst/old", copySrc, map[string]string{"X-Amz-Metadata-Directive": "REPLACE"}, ""},
		attempt{"part + copy source", partPath, nil, copySrc, ""},
		attempt{"part copy + copy source range", partPath, copySrc, map[string]string{"X-Amz-Copy-Source-Range": "bytes=0-2"}, ""},
	)

	for _, tc := range cases {
		for _, mode := range []string{"presigned", "header"} {
			var r *http.Request
			if mode == "presigned" {
				r = presignReq(t, "PUT", l.url+tc.path, tc.signed, body, rootAK, rootSK, time.Now())
			} else {
				r = l.signed(t, "PUT", tc.path, body, tc.signed, rootAK, rootSK, time.Now())
			}
			for k, v := range tc.extra {
				r.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			e := readError(t, resp)
			named := true
			for k := range tc.extra {
				named = named && strings.Contains(e.Message, strings.ToLower(k))
			}
			if resp.StatusCode != http.StatusForbidden || e.Code != "AccessDenied" || !named {
				t.Errorf("%s (%s): %d %+v, want 403 AccessDenied naming %v", tc.name, mode, resp.StatusCode, e, tc.extra)
			}
			if tc.target != "" {
				if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("shdst"), Key: aws.String(tc.target)}); errCodeOf(err) != "NotFound" {
					t.Errorf("%s (%s): %s was written: %v", tc.name, mode, tc.target, err)
				}
			}
		}
	}
	// The old object, its metadata and tags, and the upload are unchanged.
	if got := mustGet(t, c, "shdst", "old"); string(got) != "original" {
		t.Errorf("old object now %q", got)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("shdst"), Key: aws.String("old")})
	if err != nil || *h.ETag != *oldHead.ETag || len(h.Metadata) != 1 || h.Metadata["keep"] != "1" || h.WebsiteRedirectLocation != nil {
		t.Errorf("old object's head changed: %v %+v", err, h)
	}
	if tg, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("shdst"), Key: aws.String("old")}); err != nil || len(tg.TagSet) != 0 {
		t.Errorf("old object's tags: %v %+v", err, tg)
	}
	if lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("shdst"), Key: aws.String("mp"), UploadId: up.UploadId}); err != nil || len(lp.Parts) != 0 {
		t.Errorf("parts after refused part uploads: %v %+v", err, lp)
	}
	if lo, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("shdst")}); err != nil || len(lo.Contents) != 1 {
		t.Errorf("objects in shdst: %v %+v", err, lo)
	}

	// Signed, the same operations work: a presigned copy, a header-signed
	// copy with REPLACE, a presigned part copy with a range.
	r := presignReq(t, "PUT", l.url+"/shdst/copied", copySrc, nil, rootAK, rootSK, time.Now())
	resp, err := http.DefaultClient.Do(r)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("presigned signed copy: %v %+v", err, readError(t, resp))
	}
	resp.Body.Close()
	if got := mustGet(t, c, "shdst", "copied"); string(got) != "the secret" {
		t.Errorf("presigned copy: %q", got)
	}
	r = l.signed(t, "PUT", "/shdst/copied2", nil, map[string]string{"X-Amz-Copy-Source": "shsrc/secret.txt", "X-Amz-Metadata-Directive": "REPLACE",
		"X-Amz-Meta-Color": "blue", "X-Amz-Tagging-Directive": "REPLACE", "X-Amz-Tagging": "t=1"}, rootAK, rootSK, time.Now())
	resp, err = http.DefaultClient.Do(r)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("header-signed copy: %v %+v", err, readError(t, resp))
	}
	resp.Body.Close()
	h, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("shdst"), Key: aws.String("copied2")})
	if err != nil || h.Metadata["color"] != "blue" {
		t.Errorf("header-signed copy with REPLACE: %v %+v", err, h)
	}
	if tg, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("shdst"), Key: aws.String("copied2")}); err != nil || len(tg.TagSet) != 1 {
		t.Errorf("header-signed copy's tags: %v %+v", err, tg)
	}
	r = presignReq(t, "PUT", l.url+partPath, map[string]string{"X-Amz-Copy-Source": "shsrc/secret.txt", "X-Amz-Copy-Source-Range": "bytes=4-9"}, nil, rootAK, rootSK, time.Now())
	resp, err = http.DefaultClient.Do(r)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("presigned part copy: %v %+v", err, readError(t, resp))
	}
	resp.Body.Close()
	done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("shdst"), Key: aws.String("mp"), UploadId: up.UploadId,
		MultipartUpload: &s3types.CompletedMultipartUpload{Parts: []s3types.CompletedPart{{PartNumber: aws.Int32(1), ETag: aws.String(etagOfPart(t, c, up.UploadId))}}}})
	if err != nil || done == nil {
		t.Fatalf("complete: %v", err)
	}
	if got := mustGet(t, c, "shdst", "mp"); string(got) != "secret" {
		t.Errorf("part copy with a signed range: %q", got)
	}
	// And the SDK itself, with metadata, tags, Content-MD5 and a checksum.
	md := md5.Sum(body)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("shdst"), Key: aws.String("sdk"), Body: bytes.NewReader(body),
		Metadata: map[string]string{"a": "b"}, Tagging: aws.String("x=y"), ContentMD5: aws.String(base64.StdEncoding.EncodeToString(md[:])),
		ChecksumAlgorithm: s3types.ChecksumAlgorithmCrc32}); err != nil {
		t.Errorf("SDK PutObject with signed extras: %v", err)
	}
}

func etagOfPart(t *testing.T, c *s3.Client, uploadID *string) string {
	t.Helper()
	lp, err := c.ListParts(context.Background(), &s3.ListPartsInput{Bucket: aws.String("shdst"), Key: aws.String("mp"), UploadId: uploadID})
	if err != nil || len(lp.Parts) != 1 {
		t.Fatalf("list parts: %v %+v", err, lp)
	}
	return *lp.Parts[0].ETag
}

// A URL presigned by the aws CLI (botocore) still works through a plain
// HTTP client, and an unsigned x-amz-* header added to it is refused.
func TestAWSCLIPresignedURL(t *testing.T) {
	awsBin := need(t, "/usr/bin/aws")
	if testing.Short() {
		t.Skip("e2e with the aws CLI is not short")
	}
	l := startGW(t)
	c := l.root(t)
	mustBucket(t, c, "clipre")
	mustPut(t, c, "clipre", "dir/a b+c.txt", []byte("presigned by botocore"))
	tmp := t.TempDir()
	env := []string{"AWS_ACCESS_KEY_ID=" + rootAK, "AWS_SECRET_ACCESS_KEY=" + rootSK, "AWS_DEFAULT_REGION=us-east-1", "AWS_CA_BUNDLE=",
		"AWS_CONFIG_FILE=" + tmp + "/none", "AWS_SHARED_CREDENTIALS_FILE=" + tmp + "/none", "AWS_PAGER=", "HOME=" + tmp}
	u := strings.TrimSpace(run(t, env, awsBin, "--endpoint-url", l.url, "s3", "presign", "s3://clipre/dir/a b+c.txt", "--expires-in", "300"))
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "presigned by botocore" {
		t.Fatalf("aws s3 presign URL: %d %s", resp.StatusCode, b)
	}
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("X-Amz-Checksum-Mode", "ENABLED")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if e := readError(t, resp); resp.StatusCode != 403 || e.Code != "AccessDenied" || !strings.Contains(e.Message, "x-amz-checksum-mode") {
		t.Fatalf("aws s3 presign URL plus an unsigned header: %d %+v", resp.StatusCode, e)
	}
}
