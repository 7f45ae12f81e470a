package gateway

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

var testCreds = aws.Credentials{AccessKeyID: "AKTEST", SecretAccessKey: "secret-test-key"}

func apiCode(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	if err == nil {
		return ""
	}
	return "?" + err.Error()
}

// sdkSigned returns a request signed by the AWS SDK's signer (not ours).
func sdkSigned(t *testing.T, method, target string, hdr map[string]string, payloadHash string, at time.Time) *http.Request {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	r.Header.Set("X-Amz-Content-Sha256", payloadHash)
	s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err := s.SignHTTP(context.Background(), testCreds, r, payloadHash, "s3", "us-east-1", at); err != nil {
		t.Fatal(err)
	}
	return r
}

func verify(r *http.Request, now time.Time, secret string) error {
	sr, err := parseSigRequest(r)
	if err != nil {
		return err
	}
	if err := sr.checkTime(now); err != nil {
		return err
	}
	_, err = verifySignature(r, sr, secret)
	return err
}

func TestSigV4HeaderAgainstSDKSigner(t *testing.T) {
	now := time.Now().UTC()
	targets := []string{
		"http://127.0.0.1:9300/",
		"http://127.0.0.1:9300/bkt",
		"http://127.0.0.1:9300/bkt/plain.txt",
		"http://127.0.0.1:9300/bkt/a%20b%2Bc/%E2%82%AC%3D~x.txt?tagging",
		"http://127.0.0.1:9300/bkt?list-type=2&prefix=a%2Fb&delimiter=%2F&max-keys=10",
		"http://127.0.0.1:9300/bkt/k?uploadId=abc%3D%3D&partNumber=3",
		"http://bkt.localhost:9300/some/key",
	}
	for _, target := range targets {
		r := sdkSigned(t, "PUT", target, map[string]string{"Content-Type": "text/plain", "X-Amz-Meta-Color": "  blue   green "}, unsignedPayload, now)
		if err := verify(r, now, testCreds.SecretAccessKey); err != nil {
			t.Errorf("%s: %v", target, err)
		}
		if err := verify(r, now, "wrong-secret"); apiCode(err) != "SignatureDoesNotMatch" {
			t.Errorf("%s with a wrong secret: %v", target, err)
		}
		r.Header.Set("Content-Type", "text/html")
		if err := verify(r, now, testCreds.SecretAccessKey); apiCode(err) != "SignatureDoesNotMatch" {
			t.Errorf("%s with a changed signed header: %v", target, err)
		}
	}
}

func TestSigV4ClockSkew(t *testing.T) {
	now := time.Now().UTC()
	for _, tc := range []struct {
		skew time.Duration
		want string
	}{{0, ""}, {14 * time.Minute, ""}, {-14 * time.Minute, ""}, {16 * time.Minute, "RequestTimeTooSkewed"}, {-16 * time.Minute, "RequestTimeTooSkewed"}} {
		r := sdkSigned(t, "GET", "http://127.0.0.1:9300/bkt/k", nil, emptySHA256, now.Add(tc.skew))
		if err := verify(r, now, testCreds.SecretAccessKey); apiCode(err) != tc.want {
			t.Errorf("skew %v: %v, want %q", tc.skew, err, tc.want)
		}
	}
}

func TestSigV4Presigned(t *testing.T) {
	now := time.Now().UTC()
	s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	presign := func(target string, exp time.Duration, at time.Time) *http.Request {
		r := httptest.NewRequest("GET", target, nil)
		q := r.URL.Query()
		q.Set("X-Amz-Expires", fmt.Sprint(int(exp.Seconds())))
		r.URL.RawQuery = q.Encode()
		u, _, err := s.PresignHTTP(context.Background(), testCreds, r, unsignedPayload, "s3", "us-east-1", at)
		if err != nil {
			t.Fatal(err)
		}
		return httptest.NewRequest("GET", u, nil)
	}
	r := presign("http://127.0.0.1:9300/bkt/a%20b.txt", time.Hour, now)
	if err := verify(r, now, testCreds.SecretAccessKey); err != nil {
		t.Fatalf("presigned: %v", err)
	}
	if err := verify(r, now.Add(2*time.Hour), testCreds.SecretAccessKey); apiCode(err) != "AccessDenied" {
		t.Fatalf("expired presigned: %v", err)
	}
	q := r.URL.Query()
	q.Set("X-Amz-Expires", "7200")
	r.URL.RawQuery = q.Encode()
	if err := verify(r, now, testCreds.SecretAccessKey); apiCode(err) != "SignatureDoesNotMatch" {
		t.Fatalf("presigned with a stretched expiry: %v", err)
	}
}

func TestParseAuthorizationRejects(t *testing.T) {
	good := "AWS4-HMAC-SHA256 Credential=AK/20250101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + strings.Repeat("a", 64)
	if _, _, _, err := parseAuthorization(good); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		"",
		"AWS AK:sig",
		"AWS4-HMAC-SHA256",
		"AWS4-HMAC-SHA256 Credential=AK/2025/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + strings.Repeat("a", 64),
		"AWS4-HMAC-SHA256 Credential=AK/20250101/us-east-1/s3/aws4_request, SignedHeaders=x-amz-date;host, Signature=" + strings.Repeat("a", 64),
		"AWS4-HMAC-SHA256 Credential=AK/20250101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=xyz",
		"AWS4-HMAC-SHA256 Credential=AK/20250101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=" + strings.Repeat("a", 64),
		"AWS4-HMAC-SHA256 Credential=A/K/20250101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + strings.Repeat("a", 64),
		"AWS4-HMAC-SHA256 SignedHeaders=host, Signature=" + strings.Repeat("a", 64),
	} {
		if _, _, _, err := parseAuthorization(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// encodeChunked builds an aws-chunked body the way SDKs do, with chunk
// signatures from the SDK's stream signer (independent of our decoder).
func encodeChunked(t testing.TB, data []byte, chunk int, seed string, at time.Time, trailer map[string]string, signed bool) []byte {
	var ss *v4.StreamSigner
	if signed {
		seedB, _ := hex.DecodeString(seed)
		ss = v4.NewStreamSigner(testCreds, "s3", "us-east-1", seedB)
	}
	var b bytes.Buffer
	emit := func(p []byte) {
		if ss != nil {
			sig, err := ss.GetSignature(context.Background(), nil, p, at)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%x;chunk-signature=%x\r\n", len(p), sig)
		} else {
			fmt.Fprintf(&b, "%x\r\n", len(p))
		}
		b.Write(p)
		if len(p) > 0 {
			b.WriteString("\r\n")
		}
	}
	for off := 0; off < len(data); off += chunk {
		emit(data[off:min(off+chunk, len(data))])
	}
	emit(nil)
	for k, v := range trailer {
		fmt.Fprintf(&b, "%s:%s\r\n", k, v)
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

func TestChunkedSignedDecoder(t *testing.T) {
	at := time.Now().UTC()
	data := bytes.Repeat([]byte("0123456789abcdef"), 5000)
	seed := strings.Repeat("ab", 32)
	key := signingKey(testCreds.SecretAccessKey, credScope{AccessKey: "AKTEST", Date: at.Format(scopeDateFmt), Region: "us-east-1", Service: "s3"})
	signer := func() *chunkSigner {
		return &chunkSigner{key: key, amzDate: at.Format(amzDateFormat), scope: at.Format(scopeDateFmt) + "/us-east-1/s3/aws4_request", prevSig: seed}
	}
	body := encodeChunked(t, data, 8192, seed, at, nil, true)
	got, err := io.ReadAll(newChunkedReader(bytes.NewReader(body), signer(), false))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("decode: %v, %d bytes (want %d)", err, len(got), len(data))
	}
	// One flipped payload byte breaks that chunk's signature.
	bad := append([]byte{}, body...)
	bad[bytes.Index(bad, []byte("\r\n"))+10] ^= 1
	if _, err := io.ReadAll(newChunkedReader(bytes.NewReader(bad), signer(), false)); apiCode(err) != "SignatureDoesNotMatch" {
		t.Fatalf("tampered chunk: %v", err)
	}
	// A truncated stream is an incomplete body, never a short object.
	if _, err := io.ReadAll(newChunkedReader(bytes.NewReader(body[:len(body)/2]), signer(), false)); err == nil {
		t.Fatal("truncated stream decoded")
	}
}

func TestChunkedUnsignedTrailer(t *testing.T) {
	data := []byte(strings.Repeat("hello world ", 1000))
	body := encodeChunked(t, data, 1000, "", time.Now(), map[string]string{"x-amz-checksum-crc32": "AAAAAA=="}, false)
	cr := newChunkedReader(bytes.NewReader(body), nil, true)
	got, err := io.ReadAll(cr)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("decode: %v", err)
	}
	if cr.Trailer["x-amz-checksum-crc32"] != "AAAAAA==" {
		t.Fatalf("trailer %v", cr.Trailer)
	}
	// Without the closing blank line (some encoders end at the trailer).
	cr = newChunkedReader(bytes.NewReader(bytes.TrimSuffix(body, []byte("\r\n"))), nil, true)
	if _, err := io.ReadAll(cr); err != nil || cr.Trailer["x-amz-checksum-crc32"] != "AAAAAA==" {
		t.Fatalf("no final CRLF: %v %v", err, cr.Trailer)
	}
}

// The decoder reads framing through a small buffer and large runs of data
// straight into the caller's: however the body arrives, and with framing
// lines longer than that buffer, the same bytes come out.
func TestChunkedDecoderReadSizes(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 20000)
	long := strings.Repeat("A", 3*chunkedBuffer)
	body := encodeChunked(t, data, 64<<10, "", time.Now(), map[string]string{"x-amz-meta-long": long}, false)
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(body) },
		"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(body)) },
		"halves":   func() io.Reader { return iotest.HalfReader(bytes.NewReader(body)) },
	} {
		cr := newChunkedReader(r(), nil, true)
		got, err := io.ReadAll(cr)
		if err != nil || !bytes.Equal(got, data) || cr.Trailer["x-amz-meta-long"] != long {
			t.Fatalf("%s: %v, %d bytes (want %d), trailer of %d bytes", name, err, len(got), len(data), len(cr.Trailer["x-amz-meta-long"]))
		}
	}
}

// A query parameter with an empty name is part of the canonical query like
// any other: the SDK signs it, and one added after signing breaks the
// signature (it was once dropped, so it could be added unsigned).
func TestSigV4EmptyNameQueryParameter(t *testing.T) {
	now := time.Now().UTC()
	r := sdkSigned(t, "GET", "http://127.0.0.1:9300/bkt?=x&list-type=2", nil, emptySHA256, now)
	if err := verify(r, now, testCreds.SecretAccessKey); err != nil {
		t.Fatalf("SDK-signed with an empty-name parameter: %v", err)
	}
	r = sdkSigned(t, "GET", "http://127.0.0.1:9300/bkt?list-type=2", nil, emptySHA256, now)
	r.URL.RawQuery += "&=added"
	if err := verify(r, now, testCreds.SecretAccessKey); apiCode(err) != "SignatureDoesNotMatch" {
		t.Fatalf("an empty-name parameter added after signing: %v", err)
	}
}
